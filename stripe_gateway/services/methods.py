"""Saved cards: a SetupIntent the browser confirms with Stripe.js, then the card kept (brand,
last four, expiry) as one of the account's payment methods; one is the default, the one
renewals charge. Removing one detaches it at Stripe."""

import stripe
from django.db import transaction
from django.utils.translation import gettext as _
from stripe.params import SetupIntentCreateParams

from accounts.actors import Actor
from accounts.models import Account
from accounts.services import account_lock
from events.services import record_event
from hosting.errors import Conflict, ValidationFailed
from stripe_gateway.models import PaymentMethod
from stripe_gateway.representations import payment_method_representation
from stripe_gateway.services.client import GatewayUnavailable, stripe_client
from stripe_gateway.services.customers import stripe_customer_id


def _event(method: PaymentMethod, kind: str, actor: Actor, previous: dict | None = None) -> None:
    record_event(
        type=f"payment_method.{kind}",
        account=method.account,
        object_type="payment_method",
        obj=payment_method_representation(method),
        actor=actor,
        previous_attributes=previous,
    )


def setup_intent_create(*, account: Account) -> dict[str, str | None]:
    """A SetupIntent for saving a card off-session: its id and the client secret Stripe.js
    confirms in the browser (never stored here)."""
    params: SetupIntentCreateParams = {
        "customer": stripe_customer_id(account),
        "usage": "off_session",
        # Stripe's API takes it; the SDK's type of these parameters no longer lists it.
        "payment_method_types": ["card"],  # type: ignore[typeddict-unknown-key]
        "metadata": {"account": account.id},
    }
    try:
        intent = stripe_client().v1.setup_intents.create(params=params)
    except stripe.APIConnectionError:
        raise GatewayUnavailable() from None
    return {"id": intent.id, "client_secret": intent.client_secret}


def payment_method_save(*, account: Account, setup_intent: str, actor: Actor) -> PaymentMethod:
    """Keep the card a confirmed SetupIntent of ``account`` saved (once: saving it again
    answers the same method). The first card is the default."""
    if not isinstance(setup_intent, str) or not setup_intent.startswith("seti_"):
        raise ValidationFailed.field("setup_intent", "invalid", _("Give the SetupIntent's id."))
    client = stripe_client()
    try:
        intent = client.v1.setup_intents.retrieve(setup_intent)
    except stripe.InvalidRequestError:
        raise ValidationFailed.field(
            "setup_intent", "not_found", _("No such SetupIntent at Stripe.")
        ) from None
    except stripe.APIConnectionError:
        raise GatewayUnavailable() from None
    if intent.customer != stripe_customer_id(account):
        raise ValidationFailed.field(
            "setup_intent", "not_found", _("No such SetupIntent for this account.")
        )
    if intent.status != "succeeded" or not intent.payment_method:
        raise Conflict(
            _("The card is not confirmed yet."), details={"setup_intent_status": intent.status}
        )
    stripe_id = (
        intent.payment_method
        if isinstance(intent.payment_method, str)
        else intent.payment_method.id
    )
    card = client.v1.payment_methods.retrieve(stripe_id).card
    assert card is not None  # a SetupIntent of payment_method_types ["card"] saved a card
    return _keep(account, stripe_id, card, actor)


@transaction.atomic
def _keep(
    account: Account, stripe_id: str, card: stripe.PaymentMethod.Card, actor: Actor
) -> PaymentMethod:
    account_lock(account.pk)  # one writer of defaults
    existing = PaymentMethod.objects.filter(account=account, stripe_id=stripe_id).first()
    if existing is not None:
        return existing
    method = PaymentMethod.objects.create(
        account=account,
        stripe_id=stripe_id,
        brand=str(card.brand or "card")[:20],
        last4=str(card.last4)[:4],
        exp_month=int(card.exp_month),
        exp_year=int(card.exp_year),
        is_default=not PaymentMethod.objects.filter(account=account).exists(),
    )
    _event(method, "attached", actor)
    return method


@transaction.atomic
def payment_method_set_default(*, method: PaymentMethod, actor: Actor) -> PaymentMethod:
    """Make ``method`` the card renewals charge."""
    account_lock(method.account_id)
    method = PaymentMethod.objects.select_for_update().get(pk=method.pk)
    if method.is_default:
        return method
    for other in PaymentMethod.objects.filter(account_id=method.account_id, is_default=True):
        other.is_default = False
        other.save(update_fields=["is_default"])
        _event(other, "updated", actor, {"is_default": True})
    method.is_default = True
    method.save(update_fields=["is_default"])
    _event(method, "updated", actor, {"is_default": False})
    return method


def payment_method_remove(*, method: PaymentMethod, actor: Actor) -> None:
    """Detach the card at Stripe and forget it; if it was the default, the newest other card
    becomes the default."""
    try:
        stripe_client().v1.payment_methods.detach(method.stripe_id)
    except stripe.InvalidRequestError:
        pass  # already detached at Stripe (by staff there, or a retry of this call)
    except stripe.APIConnectionError:
        raise GatewayUnavailable() from None
    payment_method_forget(method, actor)


@transaction.atomic
def payment_method_forget(method: PaymentMethod, actor: Actor) -> None:
    """Forget a card already detached at Stripe (by us, or there: its notification); the
    newest other card becomes the default if it was."""
    account_lock(method.account_id)
    found = PaymentMethod.objects.filter(pk=method.pk).first()
    if found is None:
        return
    method = found
    _event(method, "detached", actor)
    method.delete()
    if method.is_default:
        newest = PaymentMethod.objects.filter(account_id=method.account_id).first()
        if newest is not None:
            newest.is_default = True
            newest.save(update_fields=["is_default"])
            _event(newest, "updated", actor, {"is_default": False})


def default_payment_method(account_id: str) -> PaymentMethod | None:
    return PaymentMethod.objects.filter(account_id=account_id, is_default=True).first()
