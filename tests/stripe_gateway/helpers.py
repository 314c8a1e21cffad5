import stripe

from accounts.actors import Actor
from stripe_gateway.services.methods import payment_method_save, setup_intent_create

VISA = "4242424242424242"
DECLINED_AFTER_ATTACH = "4000000000000341"  # attaches, then every charge is declined
NEEDS_AUTHENTICATION = "4000002760003184"  # 3-D Secure on every payment


def save_card(client: stripe.StripeClient, account, user, number: str = VISA):
    """What the payment methods page does with Stripe.js: a SetupIntent from our server,
    confirmed in the browser with the card, then saved on our side."""
    intent = setup_intent_create(account=account)
    card = client.v1.payment_methods.create(
        params={"type": "card", "card": {"number": number, "exp_month": 12, "exp_year": 2034,
                                         "cvc": "123"}}
    )  # fmt: skip
    confirmed = client.v1.setup_intents.confirm(intent["id"], params={"payment_method": card.id})
    if confirmed.status == "requires_action":
        # the bank's challenge, passed in the browser; Stripe.js then confirms again
        client.v1.setup_intents.confirm(intent["id"])
    return payment_method_save(account=account, setup_intent=intent["id"], actor=Actor(user=user))
