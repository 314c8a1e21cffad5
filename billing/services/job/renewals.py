"""The billing job: renewals, collection, dunning, suspension and termination, by the clock.

``billing_run()`` (from ``manage.py housekeeping`` or ``manage.py billing_run --every N``) walks
the subscriptions and invoices that are due, each in its own transaction under its row lock,
taken with ``SKIP LOCKED``: two runs at once (two workers) split the work instead of doubling
it, and the invoice-per-period unique constraint backs that up. Every step re-checks its
condition under the lock, so running the job again does nothing twice. Each account is seen at
its own billing time (``billing_now``: its test clock, if it has one).

For a subscription, in order:

1. **Trial notice**: ``subscription.trial_will_end`` and an e-mail, BILLING_TRIAL_NOTICE_DAYS
   before the trial ends (at most half the trial ahead).
2. **Renewal**: the next period's invoice, BILLING_RENEWAL_DAYS_BEFORE days before the period
   ends (at most half a period ahead), finalized, due when the period ends; the account's
   credit applied at once (partly when it does not cover it). Whatever remains is collected
   (a card) at the due date, the invoice's first collection attempt, never before.
3. **Period end**: canceled at period end → ended (server or bot deleted); an unpaid first
   invoice (the order) at its due date → the order lapses (voided, canceled); otherwise the
   next period starts, ``active`` if its invoice is paid, else ``past_due``.
4. **Dunning** of an overdue invoice: collection retried on the BILLING_DUNNING_RETRY_DAYS
   after the due date, each failure an ``invoice.payment_failed`` event and a reminder (the last
   one before the suspension a suspension warning); suspended (``unpaid``) after the plan's
   suspend days; a termination warning BILLING_TERMINATION_WARNING_DAYS before the plan's
   terminate days; then terminated (deleted, canceled, the invoice uncollectible).
"""

import logging
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import cast

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.actors import SYSTEM
from accounts.models import Account
from billing.clock import billing_clock_advance
from billing.models import (
    BillingClock,
    BillingReason,
    BillingRunDay,
    Invoice,
    InvoiceStatus,
    PaymentStatus,
    Subscription,
    SubscriptionStatus,
)
from billing.rules.cycle import (
    RUNNING,
    ahead,
    dunning_days,
    next_period_end,
    renewal_due,
    renewal_lines,
)
from billing.rules.pricing import price_lines
from billing.selectors import tax_decision
from billing.services.discounts import coupon_for_period
from billing.services.fulfilment import (
    billing_suspend,
    billing_unsuspend,
    instance_terminate,
    subscription_event_record,
    subscription_status_set,
)
from billing.services.gateways import credit_collects, invoice_collect
from billing.services.invoices import (
    invoice_apply_credit,
    invoice_create,
    invoice_event_record,
    invoice_finalize,
    invoice_mark_uncollectible,
    invoice_void,
)
from billing.services.job.dunning import collection_failed
from billing.services.job.renewal_batch import renew_batch
from billing.services.notices import notify
from billing.services.subscriptions import subscription_end
from hosting.errors import ApplicationError, ValidationFailed

logger = logging.getLogger(__name__)


@dataclass
class RunReport:
    """What one run did, by step (for the command's output and the tests)."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, step: str, done: bool = True) -> None:
        if done:
            self.counts[step] = self.counts.get(step, 0) + 1

    def __str__(self) -> str:
        return ", ".join(f"{step}: {n}" for step, n in sorted(self.counts.items())) or "nothing due"


def _locked(subscription_id: str) -> Subscription | None:
    """The subscription under its lock, or None when another run holds it (it does the work)."""
    return (
        Subscription.objects.select_for_update(skip_locked=True, of=("self",))
        .select_related("price__product", "account", "server", "bot", "coupon")
        .filter(pk=subscription_id)
        .first()
    )


def _clocks() -> dict[str, datetime]:
    return dict(BillingClock.objects.values_list("account_id", "now"))


# --- one subscription ----------------------------------------------------------------------------


def _trial_notice(subscription: Subscription, now: datetime) -> bool:
    if subscription.status != SubscriptionStatus.TRIALING or subscription.trial_notified_at:
        return False
    start, end = (
        subscription.current_period_start,
        subscription.trial_end or subscription.current_period_end,
    )
    if now < end - ahead(start, end, settings.BILLING_TRIAL_NOTICE_DAYS):
        return False
    subscription.trial_notified_at = now
    subscription.save()
    subscription_event_record(subscription, "trial_will_end", SYSTEM)
    notify("trial_will_end", account=subscription.account, subscription=subscription)
    return True


def _renew(subscription: Subscription, now: datetime) -> bool:
    """Issue the next period's invoice when it is time (once: the unique constraint)."""
    if subscription.cancel_at_period_end or subscription.status not in RUNNING:
        return False
    start, end = subscription.current_period_start, subscription.current_period_end
    if not renewal_due(start, end, now):
        return False
    issued = Invoice.objects.filter(
        subscription=subscription,
        billing_reason=BillingReason.SUBSCRIPTION_CYCLE,
        period_start=end,
    ).exclude(status=InvoiceStatus.VOID)
    if issued.exists():
        return False
    price = subscription.price
    lines, next_end = renewal_lines(subscription)
    coupon = coupon_for_period(subscription, end)
    priced = price_lines(
        currency=price.currency,
        lines=lines,
        tax=tax_decision(subscription.account),
        coupon=coupon,
    )
    invoice = invoice_create(
        account=subscription.account,
        currency=price.currency,
        lines=priced.lines,
        tax=priced.tax,
        coupon=coupon if any(line["discount_amount"] for line in priced.lines) else None,
        billing_reason=BillingReason.SUBSCRIPTION_CYCLE,
        subscription=subscription,
        period_start=end,
        period_end=next_end,
    )
    # Due when the period it pays for starts: the credit now (partly if need be), anything
    # else (a card) only then, at its collection attempt (``_retry``), never before.
    invoice = invoice_finalize(invoice=invoice, due_date=end)
    if invoice.status == InvoiceStatus.OPEN and credit_collects(subscription.account_id):
        invoice_apply_credit(invoice=invoice)
    return True


def _period_end(subscription: Subscription, now: datetime) -> str | None:
    """At the period's end: end it, lapse an unpaid order, or start the next period."""
    if subscription.status == SubscriptionStatus.INCOMPLETE:
        first = subscription.invoices.filter(
            billing_reason=BillingReason.SUBSCRIPTION_CREATE
        ).first()
        if (
            first is not None
            and first.status == InvoiceStatus.OPEN
            and first.due_date
            and first.due_date <= now
        ):
            subscription_end(subscription, at=now, actor=SYSTEM)
            return "order_lapsed"
        return None
    if subscription.status not in RUNNING or subscription.current_period_end > now:
        return None
    if subscription.cancel_at_period_end:
        subscription_end(subscription, at=subscription.current_period_end, actor=SYSTEM)
        return "ended"
    start = subscription.current_period_end
    renewal = (
        Invoice.objects.filter(
            subscription=subscription,
            billing_reason=BillingReason.SUBSCRIPTION_CYCLE,
            period_start=start,
        )
        .exclude(status=InvoiceStatus.VOID)
        .first()
    )
    if renewal is None:
        _renew(subscription, now)  # a run that missed the renewal's day catches up first
        renewal = (
            Invoice.objects.filter(
                subscription=subscription,
                billing_reason=BillingReason.SUBSCRIPTION_CYCLE,
                period_start=start,
            )
            .exclude(status=InvoiceStatus.VOID)
            .first()
        )
    subscription.current_period_start = start
    subscription.current_period_end = (
        # a cycle invoice has its period (and the column is not null)
        cast(datetime, renewal.period_end) if renewal else next_period_end(subscription)
    )
    subscription.save()
    paid = renewal is not None and renewal.status == InvoiceStatus.PAID
    if paid and subscription.status == SubscriptionStatus.TRIALING:
        subscription_status_set(subscription, SubscriptionStatus.ACTIVE, actor=SYSTEM)
    elif not paid and subscription.status in (
        SubscriptionStatus.TRIALING,
        SubscriptionStatus.ACTIVE,
    ):
        _fall_past_due(subscription, renewal)
    else:
        subscription_event_record(subscription, "updated", SYSTEM)
    return "period_started"


def _fall_past_due(subscription: Subscription, overdue: Invoice | None) -> None:
    """``past_due`` for an overdue invoice: its ``invoice.overdue`` event and the reminder
    saying when the suspension comes."""
    subscription_status_set(subscription, SubscriptionStatus.PAST_DUE, actor=SYSTEM)
    if overdue is not None:
        invoice_event_record(overdue, "overdue", SYSTEM)
        suspend_days, _ = dunning_days(subscription)
        assert overdue.due_date is not None  # overdue: it has a due date
        notify(
            "payment_overdue",
            account=subscription.account,
            invoice=overdue,
            suspend_at=overdue.due_date + timedelta(days=suspend_days),
        )


def _oldest_overdue(subscription: Subscription, now: datetime) -> Invoice | None:
    return (
        Invoice.objects.filter(
            subscription=subscription, status=InvoiceStatus.OPEN, due_date__lte=now
        )
        .exclude(billing_reason=BillingReason.SUBSCRIPTION_CREATE)
        .order_by("due_date", "id")
        .first()
    )


def _dunning(subscription: Subscription, now: datetime, report: RunReport) -> None:
    if subscription.status == SubscriptionStatus.ACTIVE:
        # An invoice outside the period's renewal (a plan change's charge) that is overdue
        # makes the subscription past_due as an unpaid renewal does at its period's start.
        overdue = _oldest_overdue(subscription, now)
        if overdue is not None:
            _fall_past_due(subscription, overdue)
            report.add("past_due")
        return
    if subscription.status not in (SubscriptionStatus.PAST_DUE, SubscriptionStatus.UNPAID):
        return
    overdue = _oldest_overdue(subscription, now)
    if overdue is None:
        return
    suspend_days, terminate_days = dunning_days(subscription)
    since = overdue.due_date
    assert since is not None  # _oldest_overdue's are due by now
    if now >= since + timedelta(days=terminate_days):
        for unpaid in Invoice.objects.filter(subscription=subscription, status=InvoiceStatus.OPEN):
            if unpaid.period_start is not None and unpaid.period_start >= now:
                continue  # a period never served: subscription_end voids it
            if unpaid.amount_paid == 0 and unpaid.due_date and unpaid.due_date > now:
                invoice_void(invoice=unpaid, actor=SYSTEM)  # not yet due: nothing is owed for it
            else:
                invoice_mark_uncollectible(invoice=unpaid, actor=SYSTEM)
        notify(
            "terminated", account=subscription.account, invoice=overdue, subscription=subscription
        )
        subscription_end(subscription, at=now, actor=SYSTEM)
        report.add("terminated")
        return
    warn_at = since + timedelta(days=terminate_days - settings.BILLING_TERMINATION_WARNING_DAYS)
    if now >= warn_at and subscription.termination_warned_at is None:
        subscription.termination_warned_at = now
        subscription.save()
        notify(
            "termination_warning",
            account=subscription.account,
            invoice=overdue,
            subscription=subscription,
            terminate_at=since + timedelta(days=terminate_days),
        )
        report.add("termination_warnings")
    if subscription.status == SubscriptionStatus.PAST_DUE and now >= since + timedelta(
        days=suspend_days
    ):
        subscription_status_set(subscription, SubscriptionStatus.UNPAID, actor=SYSTEM)
        billing_suspend(subscription)
        notify(
            "suspended",
            account=subscription.account,
            invoice=overdue,
            subscription=subscription,
            terminate_at=since + timedelta(days=terminate_days),
        )
        report.add("suspended")


def _retry(invoice: Invoice, now: datetime) -> bool:
    """A dunning retry of an overdue invoice: plan the next, collect; on failure, say so
    (``dunning.collection_failed``). A card payment still in flight reports its own outcome."""
    if (
        invoice.status != InvoiceStatus.OPEN
        or not invoice.next_payment_attempt
        or invoice.next_payment_attempt > now
    ):
        return False
    invoice.attempt_count += 1
    due = invoice.due_date or now
    later = [due + timedelta(days=day) for day in settings.BILLING_DUNNING_RETRY_DAYS]
    invoice.next_payment_attempt = next((at for at in later if at > now), None)
    invoice.save(update_fields=["attempt_count", "next_payment_attempt"])
    payment = invoice_collect(invoice=invoice)
    invoice.refresh_from_db()
    if invoice.status == InvoiceStatus.PAID or (
        payment is not None and payment.status == PaymentStatus.PROCESSING
    ):
        return True
    collection_failed(invoice, now)
    return True


# --- the run ----------------------------------------------------------------------------------


def _subscription_step(
    subscription_id: str,
    clocks: dict[str, datetime],
    report: RunReport,
    *,
    period_started: bool = False,
) -> None:
    """One subscription's due steps (``period_started``: only those that follow the start of
    a period, which a batch made); a refusal (say, its server is busy with another action) is
    logged and the step is tried again on the next run, without stopping this one."""
    try:
        if period_started:
            _later_steps(subscription_id, clocks, report, period_started=True)
        else:
            _subscription_steps(subscription_id, clocks, report)
    except ApplicationError as refusal:
        logger.warning("billing: %s deferred to the next run: %s", subscription_id, refusal)
        report.add("deferred")


def _ended_but_still_running(scope: Q) -> list[Subscription]:
    """Ended subscriptions whose server or bot could not be deleted at the time (it was busy
    with another action): the deletion is tried again."""
    live = Q(server__isnull=False, server__deleted_at__isnull=True) & ~Q(server__status="deleting")
    live |= Q(bot__isnull=False, bot__deleted_at__isnull=True) & ~Q(bot__status="deleting")
    return list(
        Subscription.objects.filter(
            scope, live, status=SubscriptionStatus.CANCELED, ended_at__isnull=False
        ).select_related("server", "bot")
    )


def _subscription_steps(
    subscription_id: str, clocks: dict[str, datetime], report: RunReport
) -> None:
    with transaction.atomic():
        subscription = _locked(subscription_id)
        if subscription is None:
            report.add("skipped_locked")
            return
        now = clocks.get(subscription.account_id) or timezone.now()
        report.add("trial_notices", _trial_notice(subscription, now))
        report.add("renewals", _renew(subscription, now))
        outcome = _period_end(subscription, now)
        if outcome:
            report.add(outcome)
    _later_steps(subscription_id, clocks, report, period_started=outcome == "period_started")


def _later_steps(
    subscription_id: str, clocks: dict[str, datetime], report: RunReport, *, period_started: bool
) -> None:
    """After the first steps: the new period's renewal when a period has just started (a
    run that came late catches up one period at a time), then dunning."""
    if period_started:
        with transaction.atomic():
            subscription = _locked(subscription_id)
            if subscription is not None:
                report.add(
                    "renewals",
                    _renew(subscription, clocks.get(subscription.account_id) or timezone.now()),
                )
    with transaction.atomic():
        subscription = _locked(subscription_id)
        if subscription is not None:
            _dunning(subscription, clocks.get(subscription.account_id) or timezone.now(), report)


def _due_subscriptions(
    clocks: dict[str, datetime], now: datetime, shard: tuple[int, int] | None, scope: Q
) -> list[str]:
    """Subscriptions with something due (a generous window; each step checks exactly)."""
    horizon = timedelta(
        days=max(settings.BILLING_RENEWAL_DAYS_BEFORE, settings.BILLING_TRIAL_NOTICE_DAYS)
    )

    def due(at: datetime) -> Q:
        return (
            Q(status__in=RUNNING, current_period_end__lte=at + horizon)
            | Q(status=SubscriptionStatus.INCOMPLETE)
            | Q(status__in=[SubscriptionStatus.PAST_DUE, SubscriptionStatus.UNPAID])
        )

    def changes_overdue(at: datetime) -> Q:
        # a plan change's charge gone overdue (``_dunning``): looked up from the invoices'
        # side, so the subscriptions' query stays a plain index scan
        return Q(
            status=InvoiceStatus.OPEN,
            billing_reason=BillingReason.SUBSCRIPTION_UPDATE,
            due_date__lte=at,
            subscription__status=SubscriptionStatus.ACTIVE,
        )

    ids = set(
        Subscription.objects.filter(scope, due(now))
        .exclude(account_id__in=list(clocks))
        .order_by()
        .values_list("id", flat=True)
    )
    ids.update(
        Invoice.objects.filter(scope, changes_overdue(now))
        .exclude(account_id__in=list(clocks))
        .order_by()
        .values_list("subscription_id", flat=True)
    )
    for account_id, at in clocks.items():
        ids.update(
            Subscription.objects.filter(due(at), account_id=account_id)
            .order_by()
            .values_list("id", flat=True)
        )
        ids.update(
            Invoice.objects.filter(changes_overdue(at), account_id=account_id)
            .order_by()
            .values_list("subscription_id", flat=True)
        )
    return sorted(sid for sid in ids if _mine(sid, shard))


def hash_shard(identifier: str, count: int) -> int:
    """Which of ``count`` workers takes ``identifier`` (stable across processes; CRC-32
    spreads ids evenly over any number of workers)."""
    return zlib.crc32(identifier.encode()) % count


def _mine(identifier: str, shard: tuple[int, int] | None) -> bool:
    """Whether a run of ``shard`` takes what belongs to ``identifier`` (a subscription's id)."""
    return shard is None or hash_shard(identifier, shard[1]) == shard[0]


def _retry_due(
    clocks: dict[str, datetime], now: datetime, scope: Q, shard: tuple[int, int] | None
) -> list[str]:
    """Open invoices whose next collection attempt is due; with ``shard``, those of its
    subscriptions (an invoice without one by its own id)."""
    rows = set(
        Invoice.objects.filter(scope, status=InvoiceStatus.OPEN, next_payment_attempt__lte=now)
        .exclude(account_id__in=list(clocks))
        .order_by()
        .values_list("id", "subscription_id")
    )
    for account_id, at in clocks.items():
        rows.update(
            Invoice.objects.filter(
                account_id=account_id, status=InvoiceStatus.OPEN, next_payment_attempt__lte=at
            )
            .order_by()
            .values_list("id", "subscription_id")
        )
    return sorted(invoice_id for invoice_id, owner in rows if _mine(owner or invoice_id, shard))


def billing_run(
    *, shard: tuple[int, int] | None = None, account_id: str | None = None
) -> RunReport:
    """One pass of the billing job over everything due now (see the module's docstring);
    ``account_id``: only that account's (a test clock just moved, ``billing_clock_walk``)."""
    report = RunReport()
    clocks = _clocks()
    scope = Q()
    if account_id is not None:
        clocks = {account_id: clocks[account_id]} if account_id in clocks else {}
        scope = Q(account_id=account_id)
    now = timezone.now()
    for invoice_id in _retry_due(clocks, now, scope, shard):
        with transaction.atomic():
            invoice = (
                Invoice.objects.select_for_update(skip_locked=True, of=("self",))
                .select_related("account", "subscription__price__product")
                .filter(pk=invoice_id)
                .first()
            )
            if invoice is None:
                continue
            at = clocks.get(invoice.account_id) or now
            report.add("collection_attempts", _retry(invoice, at))
    due = _due_subscriptions(clocks, now, shard, scope)
    size = settings.BILLING_BATCH_SIZE
    if size:
        # the plain renewals many at a time; the rest, and what they leave due, one by one
        passed, started = [], []
        for start in range(0, len(due), size):
            left, more = renew_batch(due[start : start + size], clocks, report)
            passed += left
            started += more
        for subscription_id in started:
            _subscription_step(subscription_id, clocks, report, period_started=True)
        due = passed
    for subscription_id in due:
        _subscription_step(subscription_id, clocks, report)
    for paid in Subscription.objects.filter(
        scope, status=SubscriptionStatus.ACTIVE, billing_suspended=True
    ).select_related("server", "bot"):
        if _mine(paid.id, shard):
            with transaction.atomic():
                billing_unsuspend(paid)
                report.add("unsuspended_late", not paid.billing_suspended)
    for ended in _ended_but_still_running(scope):
        if _mine(ended.id, shard):
            with transaction.atomic():
                report.add("terminated_late", instance_terminate(ended))
    if account_id is None:
        _note_run(report, now)
    return report


def _note_run(report: RunReport, now: datetime) -> None:
    """Add this pass to its day's row (``BillingRunDay``), under the row's lock: passes of
    several workers (shards) add up."""
    with transaction.atomic():
        day, _ = BillingRunDay.objects.select_for_update().get_or_create(
            day=now.date(), defaults={"last_run_at": now}
        )
        day.runs += 1
        day.last_run_at = max(day.last_run_at, now)
        for step, count in report.counts.items():
            day.counts[step] = day.counts.get(step, 0) + count
        day.save()


# --- test clocks ----------------------------------------------------------------------------

# The most runs one move of a test clock makes (so one request stays bounded): 1,000 steps are
# 41 days of an hourly plan, or 2.7 years of daily steps.
CLOCK_WALK_MAX_STEPS = 1000
# Where a test clock may stand: billing's periods and invoice numbers need room after it.
CLOCK_YEARS = (2000, 2999)


def _walk_step(account_id: str) -> timedelta:
    """An hour when one of the account's live plans bills hourly, else a day: the job runs at
    least once per period, as it would by cron."""
    hourly = Subscription.objects.filter(
        account_id=account_id,
        status__in=[*RUNNING, SubscriptionStatus.INCOMPLETE],
        price__interval="hour",
    ).exists()
    return timedelta(hours=1) if hourly else timedelta(days=1)


def billing_clock_walk(*, account: Account, to: datetime) -> tuple[datetime, int, RunReport]:
    """Move the account's test clock to ``to`` in steps (``_walk_step``), running the billing
    job for that account at each, as Stripe's test clocks advance: renewals, trial ends and
    dunning happen at their moments on the way, in order. Returns the clock, the runs made and
    what they did. Only an account already on a test clock, or never billed, can be moved
    (``billing_clock_advance``)."""
    if not CLOCK_YEARS[0] <= to.year <= CLOCK_YEARS[1]:
        raise ValidationFailed.field(
            "to",
            "out_of_range",
            # Translators: years, 2000 and 2999.
            _("A test clock runs from %(first)s to %(last)s.")
            % {"first": CLOCK_YEARS[0], "last": CLOCK_YEARS[1]},
        )
    clock = BillingClock.objects.filter(account=account).first()
    if clock is None:
        billing_clock_advance(account=account, to=to)
        return to, 0, RunReport()
    if to < clock.now:
        raise ValidationFailed.field("to", "out_of_range", _("A billing clock only moves forward."))
    step = _walk_step(account.id)
    if (to - clock.now) / step > CLOCK_WALK_MAX_STEPS:
        raise ValidationFailed.field(
            "to",
            "too_far",
            (
                _("Move this clock at most %(max)s hours at a time (its plans are billed hourly).")
                if step < timedelta(days=1)
                else _(
                    "Move this clock at most %(max)s days at a time (its plans are billed daily "
                    "or longer)."
                )
            )
            % {"max": CLOCK_WALK_MAX_STEPS},
        )
    at, runs, report = clock.now, 0, RunReport()
    while at < to:
        at = min(at + step, to)
        billing_clock_advance(account=account, to=at)
        for name, count in billing_run(account_id=account.id).counts.items():
            report.counts[name] = report.counts.get(name, 0) + count
        runs += 1
    return at, runs, report
