"""The time billing reads: the real clock, or the account's test clock (``BillingClock``).

Every billing service asks ``billing_now(account)`` instead of ``timezone.now()``, so a test, or
staff on a demo account, can move one account a year ahead and watch renewals, trials and
dunning happen in order, as Stripe's test clocks allow.
"""

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from accounts.models import Account
from billing.models import BillingClock, Invoice
from hosting.errors import Conflict, ValidationFailed


def billing_now(account: Account) -> datetime:
    """The account's test clock if it has one, else now."""
    frozen = BillingClock.objects.filter(account=account).values_list("now", flat=True)
    return frozen.first() or timezone.now()


def on_test_clock(account: Account) -> bool:
    """Whether the account's billing runs on a test clock (its documents are test documents)."""
    return BillingClock.objects.filter(account=account).exists()


@transaction.atomic
def billing_clock_advance(*, account: Account, to: datetime) -> BillingClock:
    """Start the account's test clock at ``to`` (any time: a test starts where it likes), or
    move it forward to ``to``; it never goes back. A clock starts only on an account that was
    never billed (no invoice yet): one billed on the real clock keeps it, so its documents
    never mix real and test time (409 ``conflict``)."""
    clock = BillingClock.objects.select_for_update().filter(account=account).first()
    if clock is None:
        if Invoice.objects.filter(account=account).exists():
            raise Conflict(
                "This account has been billed on the real clock; a test clock starts only on "
                "an account without invoices (a demo account)."
            )
        return BillingClock.objects.create(account=account, now=to)
    if to < clock.now:
        raise ValidationFailed.field("to", "out_of_range", "A billing clock only moves forward.")
    clock.now = to
    clock.save(update_fields=["now", "updated_at"])
    return clock
