"""Payment gateways: the one interface every means of payment implements, and collection.

A gateway only moves money; our database alone says what is owed and what a subscription is
(a gateway never owns a subscription). The interface:

- ``charge_off_session(invoice, actor)``: take what remains on an open invoice without the
  customer present (renewals, dunning retries); a succeeded ``Payment``, or ``None`` when this
  gateway cannot take it (no saved method, not enough credit).
- ``start_hosted_payment(invoice, return_url)``: where to send the customer to pay now (a card
  page, 3-D Secure); ``PaymentNotSupported`` when the gateway has none.
- ``refund(payment, actor)``: give a payment back.
- ``handle_webhook(body, headers)``: the gateway's own notifications.

Two gateways now: ``credit`` (the account's balance: applied first, partly when it does not
cover the whole invoice, when an invoice is issued and again at each collection) and
``bank_transfer`` (the customer transfers; staff mark the invoice paid with
the reference); cards are ``stripe_gateway``'s, registered when Stripe is configured.

Which gateways an account pays through, and in which order they collect, is
``BILLING_GATEWAYS`` for every account, unless staff gave the account its own list
(``BillingProfile.payment_gateways``, e.g. a reseller on bank-transfer terms only). The same
list says whether a customer may start a payment through a gateway (``gateway_for_source``);
paying an invoice from the account's own credit by hand is always allowed.
"""

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from accounts.actors import SYSTEM, Actor
from accounts.models import Account
from billing import transitions
from billing.clock import billing_now
from billing.models import (
    BalanceTransaction,
    BillingProfile,
    CreditNote,
    Invoice,
    InvoiceStatus,
    Payment,
    PaymentStatus,
)
from billing.representations import payment_representation
from billing.services.invoices import invoice_apply_credit
from billing.services.ledger import balance_change
from events.services import record_event
from hosting.errors import ApplicationError


class PaymentNotSupported(ApplicationError):
    status, code = 422, "payment_method_not_supported"
    message = gettext_noop("This means of payment cannot do that.")


@dataclass(frozen=True)
class PaymentStarted:
    """A payment a customer started now: its payment, and when the bank wants them to confirm
    it (3-D Secure), where to send them (``redirect_url``) or what the gateway's script in the
    page needs (``client_secret``)."""

    payment: Payment
    redirect_url: str = ""
    client_secret: str = ""


class PaymentGateway(ABC):
    name: str
    # What a customer names to pay through this gateway now (``POST /v1/invoices/{id}/pay``'s
    # ``source``), if they can.
    source: str | None = None
    # Whether a credit note refunded to the customer sends the money back through this gateway
    # by itself (``refund_start``); otherwise it is recorded as refunded outside.
    refunds_to_origin: bool = False
    # Whether ``charge_off_session`` can ever take money (the billing job's batches pass over
    # a gateway that cannot: ``renewal_batch``).
    collects_off_session: bool = True

    @abstractmethod
    def charge_off_session(self, invoice: Invoice, *, actor: Actor) -> Payment | None: ...

    def start_hosted_payment(self, invoice: Invoice, *, return_url: str) -> str:
        # Translators: %(gateway)s is the gateway's code name: credit, bank_transfer, stripe.
        raise PaymentNotSupported(
            _("Paying by %(gateway)s has no payment page.") % {"gateway": self.name}
        )

    def pay_now(
        self, invoice: Invoice, *, payment_method: str | None, return_url: str, actor: Actor
    ) -> PaymentStarted:
        """Charge what remains on ``invoice`` with the customer present (``payment_method``:
        one of theirs, else their default); call it outside a transaction."""
        # Translators: %(gateway)s is the gateway's code name: credit, bank_transfer, stripe.
        raise PaymentNotSupported(
            _("Paying by %(gateway)s cannot be started by the customer.") % {"gateway": self.name}
        )

    @abstractmethod
    def refund(self, payment: Payment, *, actor: Actor) -> Payment: ...

    def handle_webhook(self, body: bytes, headers: Mapping[str, str]) -> None:
        # Translators: %(gateway)s is the gateway's code name: credit, bank_transfer, stripe.
        raise PaymentNotSupported(
            _("The %(gateway)s gateway sends no notifications.") % {"gateway": self.name}
        )

    def refund_start(
        self, payment: Payment, *, amount: int, credit_note: CreditNote, actor: Actor
    ) -> None:
        """In the credit note's transaction: have ``amount`` of ``payment`` given back to where
        it came from (the gateway does it after the commit)."""
        # Translators: %(gateway)s is the gateway's code name: credit, bank_transfer, stripe.
        raise PaymentNotSupported(
            _("The %(gateway)s gateway cannot give money back by itself.") % {"gateway": self.name}
        )

    def reference_url(self, payment: Payment) -> str | None:
        """Where staff open ``payment`` in the gateway's own dashboard, if it has one."""
        return None


def _mark_refunded(payment: Payment, *, actor: Actor) -> Payment:
    payment = Payment.objects.select_for_update().get(pk=payment.pk)
    transitions.check("payment", payment.status, PaymentStatus.REFUNDED, verb="refund this payment")
    payment.status = PaymentStatus.REFUNDED
    payment.refunded_at = billing_now(payment.account)
    payment.save()
    record_event(
        type="payment.refunded",
        account=payment.account,
        object_type="payment",
        obj=payment_representation(payment),
        actor=actor,
        related_id=payment.invoice_id,
    )
    return payment


class CreditGateway(PaymentGateway):
    """The account's credit balance: first, and partly when it does not cover all that
    remains (the next gateway collects the rest)."""

    name = "credit"

    def charge_off_session(self, invoice: Invoice, *, actor: Actor) -> Payment | None:
        if invoice_apply_credit(invoice=invoice, actor=actor) == 0:
            return None
        return invoice.payments.filter(gateway=self.name).order_by("-created_at", "-id").first()

    @transaction.atomic
    def refund(self, payment: Payment, *, actor: Actor) -> Payment:
        payment = _mark_refunded(payment, actor=actor)
        balance_change(
            account=payment.account,
            amount=payment.amount,
            currency=payment.currency,
            kind=BalanceTransaction.Kind.ADJUSTMENT,
            description=f"Refund of payment {payment.id} back to credit",
            actor=actor,
            invoice=payment.invoice,
        )
        return payment


class BankTransferGateway(PaymentGateway):
    """The customer transfers the money; staff record it (``invoice_mark_paid``)."""

    name = "bank_transfer"
    collects_off_session = False

    def charge_off_session(self, invoice: Invoice, *, actor: Actor) -> Payment | None:
        return None  # a transfer is the customer's to make: nothing can be pulled

    @transaction.atomic
    def refund(self, payment: Payment, *, actor: Actor) -> Payment:
        # The money goes back by a transfer made outside; this records that it was.
        return _mark_refunded(payment, actor=actor)


GATEWAYS: dict[str, PaymentGateway] = {
    gateway.name: gateway for gateway in (CreditGateway(), BankTransferGateway())
}


def gateway_register(gateway: PaymentGateway) -> None:
    """Add a gateway (the card gateway registers itself from its app's ``ready()``)."""
    GATEWAYS[gateway.name] = gateway


def gateway(name: str) -> PaymentGateway:
    return GATEWAYS[name]


def gateway_for_source(
    source: str, *, account: Account, profile: BillingProfile | None = None
) -> PaymentGateway | None:
    """The gateway ``account`` pays through when naming ``source`` (``card``), if it may
    (``profile``: the account's, when the caller has it)."""
    if not any(each.source == source for each in GATEWAYS.values()):
        return None  # none here at all: no need to read the account's list
    gateways = collection_gateways(account.pk, profile=profile)
    return next((each for each in gateways if each.source == source), None)


CARDS_NOT_OFFERED = gettext_noop("Cards are not offered here: this service has no Stripe settings.")
CARDS_NOT_FOR_ACCOUNT = gettext_noop(
    "Cards are not offered to this account: the hosting company chose how it pays."
)


def card_gateway(*, account: Account, profile: BillingProfile | None = None) -> PaymentGateway:
    """The gateway ``account`` pays by card through; ``PaymentNotSupported`` (422) saying why
    when there is none: no card gateway on this service, or none in the account's own list."""
    if not any(each.source == "card" for each in GATEWAYS.values()):
        raise PaymentNotSupported(_(CARDS_NOT_OFFERED))
    card = gateway_for_source("card", account=account, profile=profile)
    if card is None:
        raise PaymentNotSupported(_(CARDS_NOT_FOR_ACCOUNT))
    return card


def gateways_named(names: list[str]) -> list[PaymentGateway]:
    """The registered gateways of ``names``, in its order (unknown names are skipped: a list
    may name Stripe on a service that has no Stripe settings)."""
    return [GATEWAYS[name] for name in names if name in GATEWAYS]


def collection_gateways(
    account_id: str | None = None, *, profile: BillingProfile | None = None
) -> list[PaymentGateway]:
    """The gateways an account pays through, in collection order: its billing profile's own
    ``payment_gateways`` when staff set them, else ``BILLING_GATEWAYS``. ``profile``: the
    account's profile when the caller has it (a batch reads them all at once)."""
    if profile is None and account_id is not None:
        own = (
            BillingProfile.objects.filter(account_id=account_id)
            .values_list("payment_gateways", flat=True)
            .first()
        )
    else:
        own = profile.payment_gateways if profile is not None else None
    return gateways_named(own or settings.BILLING_GATEWAYS)


@transaction.atomic
def invoice_collect(*, invoice: Invoice, actor: Actor = SYSTEM) -> Payment | None:
    """Try each collection gateway in turn on an open invoice; the payment that settled it,
    or ``None`` when none could (the invoice stays open for dunning)."""
    invoice = Invoice.objects.select_for_update().get(pk=invoice.pk)
    if invoice.status not in (InvoiceStatus.OPEN, InvoiceStatus.UNCOLLECTIBLE):
        return None
    for each in collection_gateways(invoice.account_id):
        payment = each.charge_off_session(invoice, actor=actor)
        if payment is None:
            continue
        invoice.refresh_from_db()
        if invoice.status == InvoiceStatus.PAID or payment.status == PaymentStatus.PROCESSING:
            return payment
        # a part (the credit there was): the next gateway collects the rest
    return None


def credit_collects(
    account_id: str | None = None, *, profile: BillingProfile | None = None
) -> bool:
    """Whether the account's credit is one of its ways to pay (it is, unless staff left it out
    of the account's gateways): then it is applied when an invoice is issued."""
    return any(each.name == "credit" for each in collection_gateways(account_id, profile=profile))
