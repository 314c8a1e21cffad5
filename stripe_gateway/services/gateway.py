"""The ``stripe`` gateway on billing's interface (``billing.services.gateways``)."""

from django.conf import settings

from accounts.actors import Actor
from billing.models import Invoice, Payment
from billing.services.gateways import PaymentGateway, PaymentNotSupported
from stripe_gateway.services.charges import GATEWAY, charge_open
from stripe_gateway.services.methods import default_payment_method


class StripeGateway(PaymentGateway):
    """Saved cards: renewals and dunning charge the account's default card off-session."""

    name = GATEWAY

    def charge_off_session(self, invoice: Invoice, *, actor: Actor) -> Payment | None:
        """A processing payment, confirmed by the worker after the commit, or ``None`` when
        the account has no saved card."""
        method = default_payment_method(invoice.account_id)
        if method is None or invoice.amount_remaining <= 0:
            return None
        return charge_open(invoice=invoice, method=method, off_session=True, actor=actor)

    def reference_url(self, payment: Payment) -> str | None:
        """The PaymentIntent in Stripe's dashboard (its test mode for a test key)."""
        if not payment.gateway_payment_id:
            return None
        mode = "test/" if settings.STRIPE_SECRET_KEY.startswith(("sk_test_", "rk_test_")) else ""
        return f"https://dashboard.stripe.com/{mode}payments/{payment.gateway_payment_id}"

    def refund(self, payment: Payment, *, actor: Actor) -> Payment:
        raise PaymentNotSupported("Card refunds are made from a credit note.")
