"""Taking the day's MRR snapshot (``analytics.models.revenue``).

The MRR of a subscription is what it bills per month, before tax: its price's amount times its
quantity, less a recurring discount in force, brought to one month
(``MONTHS_PER_INTERVAL``) and rounded once, half up, to the minor unit. Counted are the
subscriptions that are billed and kept: ``active`` and ``past_due`` (a payment is late, the
customer has not left). Not counted: ``trialing`` (nothing is billed yet: it becomes new MRR
when the trial converts), ``incomplete`` (never paid), ``unpaid`` (dunning gave up; it counts
again, as a reactivation, once paid) and ``canceled``.

The discount is the coupon the current period was billed with (``coupon_for_period``, as
renewals decide it), priced by billing's own rules (``price_lines``); a ``once`` coupon is a
one-off and does not lower MRR. Prices are the catalogue's amounts: where a tax-inclusive rate
applies, the tax inside them is not taken out. Accounts on a billing test clock (demo and test
accounts) are left out: their subscriptions live in another time.
"""

from collections import defaultdict
from datetime import UTC, date, datetime
from decimal import Decimal

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from analytics.models import MrrSnapshot, MrrSnapshotDay
from billing.models import CouponDuration, Subscription, SubscriptionStatus
from billing.rules.pricing import price_lines
from billing.rules.tax import TaxDecision
from billing.selectors import subscriptions_all
from billing.services.discounts import coupon_for_period
from hosting.money import divide_half_up

COUNTED_STATUSES = (SubscriptionStatus.ACTIVE, SubscriptionStatus.PAST_DUE)
# A period's amount times the first number, divided by the second and by the price's
# interval_count, is its amount per month: a yearly amount / 12, a weekly one * 52 / 12, a daily
# one * 365 / 12, an hourly one * 8760 / 12 (a year of 365 days, months of equal length).
MONTHS_PER_INTERVAL: dict[str, tuple[int, int]] = {
    "hour": (8760, 12),
    "day": (365, 12),
    "week": (52, 12),
    "month": (1, 1),
    "year": (1, 12),
}
_NO_TAX = TaxDecision(percentage=Decimal(0))


def subscription_mrr(subscription: Subscription) -> int:
    """The subscription's MRR in its price's minor units, whatever its status (see the
    module's docstring for the rule); reads its price, coupon and account."""
    price = subscription.price
    coupon = coupon_for_period(subscription, subscription.current_period_start)
    if coupon is not None and coupon.duration == CouponDuration.ONCE:
        coupon = None
    period = {
        "description": "MRR",
        "quantity": subscription.quantity,
        "unit_amount": price.unit_amount,
    }
    priced = price_lines(
        currency=price.currency,
        lines=[period],
        coupon=coupon,
        tax=_NO_TAX,
    ).lines[0]
    net = priced["quantity"] * priced["unit_amount"] - priced["discount_amount"]
    times, per = MONTHS_PER_INTERVAL[price.interval]
    return divide_half_up(net * times, per * price.interval_count)


def _counted_subscriptions() -> QuerySet[Subscription]:
    return (
        subscriptions_all()
        .filter(status__in=COUNTED_STATUSES, account__billing_clock__isnull=True)
        .select_related("price", "coupon", "account")
        .order_by("id")
    )


@transaction.atomic
def mrr_snapshot_take(*, day: date, now: datetime | None = None) -> MrrSnapshotDay:
    """Record every account's MRR under ``day``, as the subscriptions stand now; taking a day
    again replaces what it held (two takers of one day take turns on its row)."""
    now = now or timezone.now()
    MrrSnapshotDay.objects.get_or_create(day=day, defaults={"taken_at": now})
    taken = MrrSnapshotDay.objects.select_for_update().get(day=day)
    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for subscription in _counted_subscriptions().iterator(chunk_size=2000):
        mrr = subscription_mrr(subscription)
        if mrr > 0:
            total = totals[(subscription.account_id, subscription.price.currency)]
            total[0] += mrr
            total[1] += 1
    MrrSnapshot.objects.filter(day=day).delete()
    MrrSnapshot.objects.bulk_create(
        [
            MrrSnapshot(
                day=day, account_id=account_id, currency=currency, mrr=mrr, subscriptions=count
            )
            for (account_id, currency), (mrr, count) in sorted(totals.items())
        ],
        batch_size=1000,
    )
    taken.taken_at = now
    taken.accounts = len({account_id for account_id, _ in totals})
    taken.save()
    return taken


def mrr_snapshot_daily(*, now: datetime | None = None) -> int:
    """Housekeeping: take today's (UTC) snapshot unless it was taken already; 1 if taken."""
    now = now or timezone.now()
    today = now.astimezone(UTC).date()
    if MrrSnapshotDay.objects.filter(day=today).exists():
        return 0
    mrr_snapshot_take(day=today, now=now)
    return 1
