"""The billing cycle's rules of time, shared by the billing job's two paths (``renewals``, one
subscription at a time, and ``renewal_batch``, many at once): when a renewal is issued, where
the next period ends, and how long dunning waits."""

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from billing.models import Subscription, SubscriptionStatus
from billing.rules.periods import day_label, nth_period_end

RUNNING = [
    SubscriptionStatus.TRIALING,
    SubscriptionStatus.ACTIVE,
    SubscriptionStatus.PAST_DUE,
    SubscriptionStatus.UNPAID,
]


def ahead(start: datetime, end: datetime, days: int) -> timedelta:
    """``days`` ahead of ``end``, but never more than half the period."""
    return min(timedelta(days=days), (end - start) / 2)


def renewal_due(start: datetime, end: datetime, now: datetime) -> bool:
    """Whether the invoice of the period after ``start`` to ``end`` is due to be issued at ``now``
    (BILLING_RENEWAL_DAYS_BEFORE before ``end``, at most half the period ahead)."""
    return now >= end - ahead(start, end, settings.BILLING_RENEWAL_DAYS_BEFORE)


def dunning_days(subscription: Subscription) -> tuple[int, int]:
    """Days after an invoice's due date until the suspension and until the termination (the
    plan's own, else the settings')."""
    product = subscription.price.product
    suspend = product.suspend_after_days
    terminate = product.terminate_after_days
    suspend = settings.BILLING_SUSPEND_AFTER_DAYS if suspend is None else suspend
    terminate = settings.BILLING_TERMINATE_AFTER_DAYS if terminate is None else terminate
    return suspend, max(terminate, suspend + 1)


def dunning_quiet_until(subscription: Subscription, due: datetime) -> datetime:
    """Until when dunning has nothing to do about an invoice due at ``due``: its first step is
    the suspension or the termination warning, whichever comes first."""
    suspend, terminate = dunning_days(subscription)
    first = min(suspend, terminate - settings.BILLING_TERMINATION_WARNING_DAYS)
    return due + timedelta(days=first)


def next_period_end(subscription: Subscription) -> datetime:
    """The end of the period after the current one, counted from the anchor (no drift)."""
    price = subscription.price
    anchor = subscription.billing_cycle_anchor
    n = 1
    end = nth_period_end(anchor, price.interval, price.interval_count, n)
    while end <= subscription.current_period_end:
        n += 1
        end = nth_period_end(anchor, price.interval, price.interval_count, n)
    return end


def renewal_lines(subscription: Subscription) -> tuple[list[dict[str, Any]], datetime]:
    """The line of the invoice for the period after the current one (unpriced, as
    ``pricing.price_lines`` takes it), and where that period ends."""
    price = subscription.price
    end = subscription.current_period_end
    next_end = next_period_end(subscription)
    lines = [
        {
            "description": f"{price.product.name} ({day_label(end)} to {day_label(next_end)})",
            "unit_amount": price.unit_amount,
            "quantity": subscription.quantity,
            "price": price,
            "period_start": end,
            "period_end": next_end,
        }
    ]
    return lines, next_end
