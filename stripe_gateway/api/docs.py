"""The OpenAPI documentation of the payment methods API."""

from drf_spectacular.utils import extend_schema

from hosting.api.schema import envelope, error_doc, response_examples
from hosting.api.serializers import DeletedSerializer
from stripe_gateway.api.serializers import (
    PAYMENT_METHOD_EXAMPLE,
    SETUP_INTENT_EXAMPLE,
    PaymentMethodCreateSerializer,
    PaymentMethodSerializer,
    SetupIntentAnswerSerializer,
)

TAGS = ["Payment methods"]
NOT_OFFERED = error_doc(
    422,
    "payment_method_not_supported",
    "`payment_method_not_supported`: cards are not offered "
    "(the service has no Stripe settings, or the hosting company gave this account its own "
    "payment gateways without cards; removing a saved card stays possible then).",
    "Cards are not offered here: this service has no Stripe settings.",
)
GATEWAY_DOWN = error_doc(
    503,
    "payment_gateway_unavailable",
    "`payment_gateway_unavailable`: Stripe cannot be reached; nothing was changed.",
    "The card payment service cannot be reached; nothing was charged. Try again later.",
)
NOT_CONFIRMED = error_doc(
    409,
    "conflict",
    "`conflict`: the SetupIntent is not confirmed yet (`details.setup_intent_status`).",
    "The card is not confirmed yet.",
)
METHOD = envelope("payment_method", PaymentMethodSerializer())

PAYMENT_METHOD_DOCS = dict(
    list=extend_schema(
        summary="List saved cards",
        description="The account's saved cards, newest first; `is_default` marks the one "
        "renewals charge. Only brand, last four digits and expiry are kept here, never card "
        "data. Empty when the service offers no cards.",
        examples=response_examples("A saved card", None, PAYMENT_METHOD_EXAMPLE),
        tags=TAGS,
    ),
    retrieve=extend_schema(
        summary="Get a saved card",
        responses=METHOD,
        examples=response_examples("A saved card", "payment_method", PAYMENT_METHOD_EXAMPLE),
        tags=TAGS,
    ),
    create=extend_schema(
        summary="Save a card",
        description="Keep the card of a SetupIntent the browser confirmed with Stripe.js "
        "(`POST /v1/payment-methods/setup-intents` first). Saving the same SetupIntent again "
        "answers the same card. The account's first card becomes its default. A SetupIntent "
        "of another account is 400 `validation_failed` (`setup_intent`, `not_found`).",
        request=PaymentMethodCreateSerializer,
        responses={201: METHOD, 409: NOT_CONFIRMED, 422: NOT_OFFERED, 503: GATEWAY_DOWN},
        examples=response_examples("The card saved", "payment_method", PAYMENT_METHOD_EXAMPLE),
        tags=TAGS,
    ),
    destroy=extend_schema(
        summary="Remove a saved card",
        description="Detach the card at Stripe and forget it; if it was the default, the newest "
        "other card becomes the default.",
        responses={200: DeletedSerializer, 422: NOT_OFFERED, 503: GATEWAY_DOWN},
        tags=TAGS,
    ),
    make_default=extend_schema(
        summary="Make a card the default",
        description="Renewals and dunning charge the default card off-session.",
        request=None,
        responses={200: METHOD, 422: NOT_OFFERED},
        examples=response_examples("The new default", "payment_method", PAYMENT_METHOD_EXAMPLE),
        tags=TAGS,
    ),
    setup_intent=extend_schema(
        summary="Start saving a card",
        description="A Stripe SetupIntent for a card to be charged off-session later: give its "
        "`client_secret` and the `publishable_key` to Stripe.js (`confirmCardSetup`), which "
        "collects the card and runs 3-D Secure if the bank asks, then save it with "
        "`POST /v1/payment-methods`.",
        request=None,
        responses={201: SetupIntentAnswerSerializer, 422: NOT_OFFERED, 503: GATEWAY_DOWN},
        examples=response_examples("A SetupIntent", None, SETUP_INTENT_EXAMPLE),
        tags=TAGS,
    ),
)
