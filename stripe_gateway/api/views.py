"""Saved cards: list, save (after Stripe.js confirmed a SetupIntent), make default, remove."""

from django.conf import settings
from drf_spectacular.utils import extend_schema_view
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.actors import Actor
from billing.services.gateways import CARDS_NOT_OFFERED, PaymentNotSupported, card_gateway
from hosting.api.serializers import EmptyBodySerializer
from hosting.api.views import (
    ApiViewSet,
    CallerScopedMixin,
    EnvelopeListMixin,
    EnvelopeRetrieveMixin,
    created,
    deleted,
    validated,
)
from stripe_gateway.api.docs import PAYMENT_METHOD_DOCS
from stripe_gateway.api.serializers import PaymentMethodCreateSerializer, PaymentMethodSerializer
from stripe_gateway.models import PaymentMethod
from stripe_gateway.services.methods import (
    payment_method_remove,
    payment_method_save,
    payment_method_set_default,
    setup_intent_create,
)

READ, WRITE = ["billing:read"], ["billing:write"]
WRITES = ("create", "destroy", "make_default", "setup_intent")


@extend_schema_view(**PAYMENT_METHOD_DOCS)
class PaymentMethodViewSet(CallerScopedMixin, EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    model = PaymentMethod
    list_key = "payment_methods"
    resource_key = "payment_method"
    serializer_class = PaymentMethodSerializer
    required_scopes = {
        "list": READ,
        "retrieve": READ,
        "create": WRITE,
        "destroy": WRITE,
        "make_default": WRITE,
        "setup_intent": WRITE,
    }

    def caller_queryset(self, principal):
        return PaymentMethod.objects.filter(account_id=principal.account.id)

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if self.action in WRITES and not settings.STRIPE_ENABLED:
            raise PaymentNotSupported(CARDS_NOT_OFFERED)
        if self.action in WRITES and self.action != "destroy":
            # Removing a card stays possible when the account no longer pays by card.
            card_gateway(account=request.auth.account)

    def create(self, request):
        body = validated(PaymentMethodCreateSerializer, request)
        method = payment_method_save(
            account=request.auth.account,
            setup_intent=body["setup_intent"],
            actor=Actor.from_request(request),
        )
        return created(
            request,
            {"payment_method": PaymentMethodSerializer(method).data},
            f"/v1/payment-methods/{method.id}",
        )

    def destroy(self, request, pk: str):
        method = self.get_object()
        payment_method_remove(method=method, actor=Actor.from_request(request))
        return deleted(pk)

    @action(detail=True, methods=["post"], url_path="default")
    def make_default(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        method = payment_method_set_default(
            method=self.get_object(), actor=Actor.from_request(request)
        )
        return Response({"payment_method": PaymentMethodSerializer(method).data})

    @action(detail=False, methods=["post"], url_path="setup-intents")
    def setup_intent(self, request):
        validated(EmptyBodySerializer, request)
        intent = setup_intent_create(account=request.auth.account)
        return Response(
            {"setup_intent": intent, "publishable_key": settings.STRIPE_PUBLISHABLE_KEY},
            status=201,
        )
