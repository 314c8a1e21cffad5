"""The ``stripe`` gateway on billing's interface (``billing.services.gateways``)."""

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from accounts.actors import Actor
from billing.models import CreditNote, Invoice, Payment, PaymentStatus
from billing.services.gateways import PaymentGateway, PaymentNotSupported, PaymentStarted
from hosting.errors import ValidationFailed
from stripe_gateway.models import PaymentMethod
from stripe_gateway.services.charges import GATEWAY, charge_confirm, charge_open
from stripe_gateway.services.methods import default_payment_method
from stripe_gateway.services.refunds import refund_open


class StripeGateway(PaymentGateway):
    """Saved cards: renewals and dunning charge the account's default card off-session."""

    name = GATEWAY
    source = "card"
    refunds_to_origin = True

    def charge_off_session(self, invoice: Invoice, *, actor: Actor) -> Payment | None:
        """A processing payment, confirmed by the worker after the commit, or ``None`` when
        the account has no saved card."""
        method = default_payment_method(invoice.account_id)
        if method is None or invoice.amount_remaining <= 0:
            return None
        in_flight = invoice.payments.filter(status=PaymentStatus.PROCESSING).first()
        if in_flight is not None:
            return in_flight  # one charge at a time: its outcome is on its way
        return charge_open(invoice=invoice, method=method, off_session=True, actor=actor)

    def pay_now(
        self, invoice: Invoice, *, payment_method: str | None, return_url: str, actor: Actor
    ) -> PaymentStarted:
        """Charge a saved card of the invoice's account now, on session: the payment is
        committed first, then confirmed at Stripe (``charges``)."""
        if payment_method:
            method = PaymentMethod.objects.filter(
                account_id=invoice.account_id, pk=payment_method
            ).first()
        else:
            method = default_payment_method(invoice.account_id)
        if method is None:
            raise ValidationFailed.field(
                "payment_method",
                "not_found",
                _("No such saved card.") if payment_method else _("The account has no saved card."),
            )
        with transaction.atomic():
            payment = charge_open(
                invoice=invoice,
                method=method,
                off_session=False,
                return_url=return_url,
                actor=actor,
            )
        outcome = charge_confirm(payment.id)
        payment.refresh_from_db()
        return PaymentStarted(payment, outcome.redirect_url, outcome.client_secret)

    def reference_url(self, payment: Payment) -> str | None:
        """The PaymentIntent in Stripe's dashboard (its test mode for a test key)."""
        if not payment.gateway_payment_id:
            return None
        key = settings.STRIPE_SECRET_KEY or ""
        mode = "test/" if key.startswith(("sk_test_", "rk_test_")) else ""
        return f"https://dashboard.stripe.com/{mode}payments/{payment.gateway_payment_id}"

    def refund_start(
        self, payment: Payment, *, amount: int, credit_note: CreditNote, actor: Actor
    ) -> None:
        refund_open(payment=payment, amount=amount, credit_note=credit_note)

    def refund(self, payment: Payment, *, actor: Actor) -> Payment:
        raise PaymentNotSupported(
            _("Card refunds are made from a credit note (refund_to refunded).")
        )
