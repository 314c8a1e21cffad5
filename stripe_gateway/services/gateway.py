"""The ``stripe`` gateway on billing's interface (``billing.services.gateways``)."""

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

    def refund(self, payment: Payment, *, actor: Actor) -> Payment:
        raise PaymentNotSupported("Card refunds are made from a credit note.")
