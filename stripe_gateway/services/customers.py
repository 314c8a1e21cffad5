"""An account's Stripe customer, created the first time a card needs one."""

from accounts.models import Account
from stripe_gateway.models import StripeCustomer
from stripe_gateway.services.client import stripe_client


def stripe_customer_id(account: Account) -> str:
    """The id of the account's Stripe customer, created at Stripe (once: the idempotency key is
    the account's) if it has none yet. Call it outside a transaction: it may call Stripe."""
    existing = (
        StripeCustomer.objects.filter(account=account).values_list("customer_id", flat=True).first()
    )
    if existing:
        return existing
    created = stripe_client().v1.customers.create(
        params={"name": account.name, "metadata": {"account": account.id}},
        options={"idempotency_key": f"customer-{account.id}"},
    )
    # Two requests at once may both get here; the first row wins, and the other's customer
    # (the same one at Stripe, by the idempotency key) is not recorded twice.
    StripeCustomer.objects.bulk_create(
        [StripeCustomer(account=account, customer_id=created.id)], ignore_conflicts=True
    )
    return StripeCustomer.objects.get(account=account).customer_id
