"""The billing job's common case in bulk: the renewals of many subscriptions per transaction.

On a renewal day nearly every subscription the billing job meets is simply ``active``, and
needs the same steps: the next period's invoice issued (numbered, the buyer snapshotted, due
when the period starts), paid from the account's credit when that covers it, and at the
period's end the next period started (``past_due`` with its ``invoice.overdue`` when the
invoice is not paid). ``renew_batch`` takes these steps for a batch of subscriptions
(BILLING_BATCH_SIZE) in one transaction with a fixed number of statements whatever the batch's
size: the rows are locked, read and written many at a time (invoices, lines, ledger entries,
payments, events and their webhook deliveries, the e-mails' task), and each invoice series is
moved on once, by as many numbers as the batch uses.

It produces what the one-at-a-time path (``renewals``) would: the same rows, events with the
same representations in the same order, the same e-mails; ``tests/billing/test_renewal_batch``
runs both paths on the same subscriptions and compares everything. That path stays the
reference and takes everything else, decided before the batch changes anything: trials,
cancellations at the period's end, subscriptions in arrears or with an overdue invoice, an
account whose currency is not fixed yet or whose row another transaction holds, and an invoice
the credit does not cover when a gateway that can charge (a card) would be tried next. A
subscription whose period the batch started, and that has more due at once (the new period's
renewal, or a step of dunning, after a run that came late), is handed to it after the commit
for the steps that follow a period's start, as it takes them itself.

**Locks.** The subscriptions and their accounts are locked with ``SKIP LOCKED`` (what another
run holds is left to it, or to the one-at-a-time path), and the invoice series last, just
before the rows are written: every transaction takes an account before a series
(``invoices.document_number``), so none waits for a series while holding what another one
that holds that series waits for.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol, cast

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q, Sum
from django.utils import timezone

from accounts.services import account_lock
from billing import transitions
from billing.models import (
    BalanceTransaction,
    BillingProfile,
    BillingReason,
    Invoice,
    InvoiceLine,
    InvoiceStatus,
    Payment,
    PaymentStatus,
    Subscription,
    SubscriptionStatus,
    TaxRate,
)
from billing.representations import (
    balance_transaction_representation,
    invoice_representation,
    payment_representation,
    subscription_representation,
)
from billing.rules.cycle import dunning_days, dunning_quiet_until, renewal_due, renewal_lines
from billing.rules.pricing import price_lines, tax_decision_of
from billing.rules.tax import TaxDecision
from billing.services.discounts import coupon_for_period
from billing.services.gateways import credit_collects
from billing.services.invoices import (
    buyer_snapshot,
    document_numbers,
    document_series,
)
from billing.services.notices import Notice, invoice_facts, notices_queue
from events.services import EventDraft, changed_attributes, record_events


class _Report(Protocol):
    """Where a run counts its steps (``renewals.RunReport``, which imports this module)."""

    def add(self, step: str, done: bool = True) -> None: ...


@dataclass
class _Renewal:
    """One subscription's work in the batch."""

    subscription: Subscription
    now: datetime
    issued: Invoice | None = None  # the coming period's invoice, issued before this run
    invoice: Invoice | None = None  # the one this batch issues
    line: InvoiceLine | None = None
    on_test_clock: bool = False
    profile: BillingProfile | None = None
    pay_from_credit: bool = False
    advance: bool = False


@dataclass
class _Written:
    """Everything the batch writes, in the order the one-at-a-time path would."""

    invoices: list[Invoice] = field(default_factory=list)
    lines: list[InvoiceLine] = field(default_factory=list)
    entries: list[BalanceTransaction] = field(default_factory=list)
    payments: list[Payment] = field(default_factory=list)
    events: list[EventDraft] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    subscriptions: list[Subscription] = field(default_factory=list)
    balances: dict[str, int] = field(default_factory=dict)  # each account's, as the batch goes


def renew_batch(
    ids: list[str], clocks: dict[str, datetime], report: _Report
) -> tuple[list[str], list[str]]:
    """Renew what is due of the subscriptions ``ids`` in one transaction (see the module).
    Returns the ids the one-at-a-time path is to take whole, and those whose period the batch
    started and that have more due at once (the steps that follow a period's start)."""
    with transaction.atomic():
        subscriptions = list(
            Subscription.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("price__product", "account", "coupon")
            .filter(pk__in=ids)
            .order_by("pk")
        )
        for _ in range(len(ids) - len(subscriptions)):
            report.add("skipped_locked")
        renewals, passed, balances = _plan(subscriptions, clocks)
        more = _write(renewals, balances, report)
    return sorted(passed), more


# --- deciding -----------------------------------------------------------------------------


def _plan(
    subscriptions: list[Subscription], clocks: dict[str, datetime]
) -> tuple[list[_Renewal], list[str], dict[str, int]]:
    """Which of the locked subscriptions the batch renews, which it passes on, and the
    credit balance of their accounts."""
    real_now = timezone.now()
    passed = [
        each.id
        for each in subscriptions
        if each.status != SubscriptionStatus.ACTIVE or each.cancel_at_period_end
    ]
    candidates = [
        each
        for each in subscriptions
        if each.status == SubscriptionStatus.ACTIVE and not each.cancel_at_period_end
    ]
    if not candidates:
        return [], passed, {}
    locked_accounts = account_lock(*{each.account_id for each in candidates}, skip_locked=True)
    passed += [each.id for each in candidates if each.account_id not in locked_accounts]
    candidates = [each for each in candidates if each.account_id in locked_accounts]
    if not candidates:
        return [], passed, {}
    now_of = {each.id: clocks.get(each.account_id) or real_now for each in candidates}
    issued, overdue = _invoices_of(candidates, max(now_of.values()))
    profiles = BillingProfile.objects.in_bulk({each.account_id for each in candidates})
    balances = dict(
        BalanceTransaction.objects.filter(account_id__in={each.account_id for each in candidates})
        .values_list("account_id")
        .annotate(total=Sum("amount"))
        .order_by()
        .values_list("account_id", "total")
    )
    rates = list(
        TaxRate.objects.filter(active=True).values_list(
            "country", "region", "percentage", "inclusive"
        )
    )
    initial = dict(balances)
    taxes = {}
    renewals: list[_Renewal] = []
    for subscription in candidates:
        now = now_of[subscription.id]
        start, end = subscription.current_period_start, subscription.current_period_end
        renewal = _Renewal(
            subscription,
            now,
            issued=issued.get(subscription.id),
            on_test_clock=subscription.account_id in clocks,
        )
        if any(
            due <= now
            for invoice_id, due in overdue.get(subscription.id, [])
            if renewal.issued is None or invoice_id != renewal.issued.id
        ):
            passed.append(subscription.id)  # arrears: dunning's, one at a time
            continue
        issue = renewal.issued is None and renewal_due(start, end, now)
        renewal.advance = end <= now
        if not issue and not renewal.advance:
            continue  # within the due list's window, but nothing is due yet
        if issue:
            profile = profiles.get(subscription.account_id)
            if profile is None or profile.currency != subscription.price.currency:
                passed.append(subscription.id)  # the first invoice of the account fixes it
                continue
            if subscription.account_id not in taxes:
                taxes[subscription.account_id] = tax_decision_of(profile, rates)
            renewal.profile = profile
            renewal.invoice, renewal.line = _draft(
                subscription, profile, taxes[subscription.account_id], now
            )
            remaining = renewal.invoice.amount_remaining
            balance = balances.get(subscription.account_id) or 0
            if remaining > 0 and balance > 0 and credit_collects(profile=profile):
                if balance < remaining:
                    passed.append(subscription.id)  # credit in part: one at a time
                    continue
                renewal.pay_from_credit = True
                balances[subscription.account_id] = balance - remaining
            # Anything else (a card) is collected at the due date, never at issue.
        renewals.append(renewal)
    return renewals, passed, initial


def _invoices_of(
    subscriptions: list[Subscription], latest: datetime
) -> tuple[dict[str, Invoice], dict[str, list[tuple[str, datetime]]]]:
    """The coming period's invoice already issued, per subscription (with its lines), and the
    open invoices due by ``latest`` (id, due date) of each."""
    ends = {each.current_period_end for each in subscriptions}
    coming = Q(billing_reason=BillingReason.SUBSCRIPTION_CYCLE, period_start__in=ends) & ~Q(
        status=InvoiceStatus.VOID
    )
    due = Q(status=InvoiceStatus.OPEN, due_date__lte=latest) & ~Q(
        billing_reason=BillingReason.SUBSCRIPTION_CREATE
    )
    rows = list(
        Invoice.objects.filter(
            coming | due, subscription_id__in=[each.id for each in subscriptions]
        )
        .order_by()
        .values_list(
            "id", "subscription_id", "billing_reason", "period_start", "status", "due_date"
        )
    )
    end_of = {each.id: each.current_period_end for each in subscriptions}
    coming_ids = {
        invoice_id: subscription_id
        for invoice_id, subscription_id, reason, period_start, status, _ in rows
        if reason == BillingReason.SUBSCRIPTION_CYCLE
        and period_start == end_of[subscription_id]
        and status != InvoiceStatus.VOID
    }
    issued = {}
    if coming_ids:
        for invoice in Invoice.objects.filter(pk__in=coming_ids).prefetch_related("lines"):
            issued[coming_ids[invoice.id]] = invoice
    overdue: dict[str, list[tuple[str, datetime]]] = defaultdict(list)
    for invoice_id, subscription_id, _, _, status, due_date in rows:
        if status == InvoiceStatus.OPEN and due_date is not None and due_date <= latest:
            overdue[subscription_id].append((invoice_id, due_date))
    return issued, overdue


def _draft(
    subscription: Subscription, profile: BillingProfile, tax: TaxDecision, now: datetime
) -> tuple[Invoice, InvoiceLine]:
    """The renewal invoice of the coming period and its line, priced, in memory (a draft, as
    ``invoice_create`` makes it)."""
    end = subscription.current_period_end
    lines, next_end = renewal_lines(subscription)
    coupon = coupon_for_period(subscription, end)
    priced = price_lines(
        currency=subscription.price.currency,
        lines=lines,
        coupon=coupon,
        tax=tax,
    )
    (values,) = priced.lines
    invoice = Invoice(
        account=subscription.account,
        subscription=subscription,
        currency=profile.currency,
        billing_reason=BillingReason.SUBSCRIPTION_CYCLE,
        period_start=end,
        period_end=next_end,
        created_at=now,
        coupon=coupon if values["discount_amount"] else None,
        tax_percentage=tax.percentage,
        tax_inclusive=tax.inclusive,
        notes=[tax.note] if tax.note else [],
    )
    quantity = values["quantity"]
    line = InvoiceLine(
        invoice=invoice,
        position=0,
        description=values["description"][:500],
        price=values["price"],
        quantity=quantity,
        unit_amount=values["unit_amount"],
        amount=quantity * values["unit_amount"],
        discount_amount=values["discount_amount"],
        tax_amount=values["tax_amount"],
        period_start=values["period_start"],
        period_end=values["period_end"],
        proration=False,
    )
    invoice.subtotal = line.amount
    invoice.discount = line.discount_amount
    invoice.tax = line.tax_amount
    invoice.total = (
        invoice.subtotal - invoice.discount + (0 if invoice.tax_inclusive else invoice.tax)
    )
    invoice.amount_remaining = max(0, invoice.total)
    return invoice, line


# --- writing ------------------------------------------------------------------------------

# Until the numbers are taken, what shows a new invoice's number holds this placeholder, and
# ``_numbered`` puts the number in its place: the numbering statement comes last, so that each
# series' row stays locked for as short a time as can be.
_UNNUMBERED = "(unnumbered {})"


def _write(renewals: list[_Renewal], balances: dict[str, int], report: _Report) -> list[str]:
    """Build every row, event and e-mail in the order the one-at-a-time path would, number
    the new invoices, and write them; returns the ids with more due at once after the start
    of their period."""
    written = _Written(balances=balances)
    more: list[str] = []
    for renewal in renewals:
        if renewal.invoice is not None:
            _issue(renewal, written)
            report.add("renewals")
        if renewal.advance:
            if _start_period(renewal, written):
                more.append(renewal.subscription.id)
            report.add("period_started")
    by_series: dict[str, list[Invoice]] = defaultdict(list)
    for renewal in renewals:
        if renewal.invoice is not None:
            series = document_series(
                renewal.subscription.account,
                settings.BILLING_INVOICE_PREFIX,
                renewal.now,
                test_clock=renewal.on_test_clock,
            )
            by_series[series].append(renewal.invoice)
    numbers: dict[str, str] = {}
    for series, invoices in sorted(by_series.items()):
        taken = document_numbers(series, len(invoices))
        for invoice, number in zip(invoices, taken, strict=True):
            numbers[invoice.id] = number
    _numbered(written, numbers)
    Invoice.objects.bulk_create(written.invoices)
    InvoiceLine.objects.bulk_create(written.lines)
    BalanceTransaction.objects.bulk_create(written.entries)
    Payment.objects.bulk_create(written.payments)
    _periods_save(written.subscriptions)
    record_events(written.events)
    notices_queue(written.notices)
    return more


def _periods_save(subscriptions: list[Subscription]) -> None:
    """Save the subscriptions' status and period in one ``UPDATE … FROM (VALUES …)`` per
    as many rows as the database takes parameters for (Django's ``bulk_update`` writes a
    ``CASE`` per field and row: its SQL takes longer to build than the batch's rows)."""
    if not subscriptions:
        return
    table = connection.ops.quote_name(Subscription._meta.db_table)
    moment = "CAST(%s AS timestamptz)" if connection.vendor == "postgresql" else "%s"
    row = f"(%s, %s, {moment}, {moment}, {moment})"
    adapt = connection.ops.adapt_datetimefield_value
    limit = connection.features.max_query_params or 32_000
    per_statement = max(1, min(len(subscriptions), limit // 5))
    for start in range(0, len(subscriptions), per_statement):
        chunk = subscriptions[start : start + per_statement]
        params = []
        for each in chunk:
            params += [
                each.pk,
                each.status,
                adapt(each.current_period_start),
                adapt(each.current_period_end),
                adapt(each.updated_at),
            ]
        with connection.cursor() as cursor:
            cursor.execute(
                f"WITH v (id, status, period_start, period_end, updated_at) AS "  # noqa: S608
                f"(VALUES {', '.join([row] * len(chunk))}) "
                f"UPDATE {table} SET status = v.status, current_period_start = v.period_start, "
                "current_period_end = v.period_end, updated_at = v.updated_at "
                f"FROM v WHERE {table}.id = v.id",
                params,
            )


def _numbered(written: _Written, numbers: dict[str, str]) -> None:
    """Put each new invoice's number (``numbers``, by invoice id) where its placeholder
    stands: on the invoice, in its ledger entry's description, its events and e-mails."""

    def fill(text: str, invoice_id: str | None) -> str:
        if invoice_id not in numbers:
            return text
        return text.replace(_UNNUMBERED.format(invoice_id), numbers[invoice_id])

    for invoice in written.invoices:
        invoice.number = numbers[invoice.id]
    for entry in written.entries:
        entry.description = fill(entry.description, entry.invoice_id)
    for draft in written.events:
        if draft.object_type == "invoice" and draft.obj["number"] is not None:
            draft.obj["number"] = fill(draft.obj["number"], draft.obj["id"])
        elif draft.object_type == "balance_transaction":
            draft.obj["description"] = fill(draft.obj["description"], draft.obj["invoice"])
    for notice in written.notices:
        if notice.invoice is not None:
            notice.invoice["number"] = fill(notice.invoice["number"], notice.invoice["id"])


def _issue(renewal: _Renewal, written: _Written) -> None:
    """``invoice_create``, ``invoice_finalize`` and, from credit, ``invoice_collect``."""
    invoice, line, now = renewal.invoice, renewal.line, renewal.now
    assert invoice is not None and line is not None  # _write issues only what _plan drafted
    subscription = renewal.subscription
    account_id = subscription.account_id
    related = subscription.id

    def tell(kind: str, object_type: str, obj: dict, related_id: str = "") -> None:
        draft = EventDraft(kind, account_id, object_type, obj, related_id=related_id)
        written.events.append(draft)

    def invoice_event(kind: str) -> None:
        tell(f"invoice.{kind}", "invoice", invoice_representation(invoice, lines=[line]), related)

    invoice_event("created")
    transitions.check("invoice", invoice.status, InvoiceStatus.OPEN, verb="finalize this invoice")
    invoice.status = InvoiceStatus.OPEN
    invoice.finalized_at = now
    invoice.number = _UNNUMBERED.format(invoice.id)
    invoice.buyer = buyer_snapshot(subscription.account, renewal.profile)
    invoice.seller = dict(settings.BILLING_SELLER)
    invoice.due_date = invoice.next_payment_attempt = subscription.current_period_end
    invoice_event("finalized")
    if invoice.total > 0:
        written.notices.append(
            Notice(
                kind="invoice_issued",
                account_id=account_id,
                subscription_id=related,
                invoice=invoice_facts(invoice),
            )
        )
    if renewal.pay_from_credit:
        amount = invoice.amount_remaining
        balance = written.balances.get(account_id) or 0
        written.balances[account_id] = balance - amount
        entry = BalanceTransaction(
            account_id=account_id,
            kind=BalanceTransaction.Kind.APPLIED_TO_INVOICE,
            amount=-amount,
            currency=invoice.currency,
            ending_balance=balance - amount,
            description=f"Applied to invoice {invoice.number}",
            invoice=invoice,
            created_by=None,
            created_at=now,
        )
        written.entries.append(entry)
        tell(
            "customer.balance_changed",
            "balance_transaction",
            balance_transaction_representation(entry),
        )
        payment = Payment(
            account_id=account_id,
            invoice=invoice,
            gateway="credit",
            amount=amount,
            currency=invoice.currency,
            reference="",
            status=PaymentStatus.SUCCEEDED,
            created_by=None,
            created_at=now,
            succeeded_at=now,
        )
        written.payments.append(payment)
        tell("payment.succeeded", "payment", payment_representation(payment), invoice.id)
        invoice.amount_paid += amount
        invoice.amount_remaining -= amount
        written.notices.append(
            Notice(
                kind="payment_received",
                account_id=account_id,
                subscription_id=related,
                invoice=invoice_facts(invoice),
                extra={
                    # Formatted in the e-mail, in its recipient's language.
                    "amount": amount,
                    "gateway": "credit",
                },
            )
        )
    if invoice.amount_remaining == 0:
        # ``settle_paid``; a renewal's payment changes nothing of an active subscription
        # (``subscription_invoice_paid``)
        transitions.check("invoice", invoice.status, InvoiceStatus.PAID, verb="mark paid")
        invoice.status = InvoiceStatus.PAID
        invoice.paid_at = now
        invoice.next_payment_attempt = None
        invoice_event("paid")
    written.invoices.append(invoice)
    written.lines.append(line)


def _start_period(renewal: _Renewal, written: _Written) -> bool:
    """``renewals._period_end`` for an active subscription whose period ended; whether more
    is due at once (the next renewal, or dunning)."""
    subscription, now = renewal.subscription, renewal.now
    invoice = renewal.invoice or renewal.issued
    # _plan advances a period only with its invoice: issued before, or by this batch (with its line)
    assert invoice is not None
    lines = (
        [cast(InvoiceLine, renewal.line)]
        if renewal.invoice is not None
        else list(invoice.lines.all())
    )
    start = subscription.current_period_end
    subscription.current_period_start = start
    # A renewal invoice has its period; renewal_due below does arithmetic on this end
    assert invoice.period_end is not None
    subscription.current_period_end = invoice.period_end
    subscription.updated_at = timezone.now()
    written.subscriptions.append(subscription)
    related = subscription.server_id or subscription.bot_id or ""
    if invoice.status == InvoiceStatus.PAID:
        written.events.append(_subscription_event(subscription, related, None))
        return renewal_due(start, subscription.current_period_end, now)
    # ``renewals._fall_past_due``
    transitions.check("subscription", subscription.status, SubscriptionStatus.PAST_DUE)
    previous = subscription_representation(subscription)
    subscription.status = SubscriptionStatus.PAST_DUE
    written.events.append(_subscription_event(subscription, related, previous))
    written.events.append(
        EventDraft(
            type="invoice.overdue",
            account_id=subscription.account_id,
            object_type="invoice",
            obj=invoice_representation(invoice, lines=lines),
            related_id=subscription.id,
        )
    )
    suspend_days, _ = dunning_days(subscription)
    assert invoice.due_date is not None  # finalized: due when its period starts
    written.notices.append(
        Notice(
            kind="payment_overdue",
            account_id=subscription.account_id,
            subscription_id=subscription.id,
            invoice=invoice_facts(invoice),
            extra={"suspend_at": invoice.due_date + timedelta(days=suspend_days)},
        )
    )
    return renewal_due(start, subscription.current_period_end, now) or (
        now >= dunning_quiet_until(subscription, invoice.due_date)
    )


def _subscription_event(
    subscription: Subscription, related: str, previous: dict[str, Any] | None
) -> EventDraft:
    obj = subscription_representation(subscription)
    return EventDraft(
        type="subscription.updated",
        account_id=subscription.account_id,
        object_type="subscription",
        obj=obj,
        related_id=related,
        previous_attributes=changed_attributes(previous, obj) if previous is not None else None,
    )
