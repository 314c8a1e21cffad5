"""Webhook endpoints, their deliveries, secret rotation, test events and retries.

Views parse the body, call one service of ``webhooks.services`` with the request's actor and
serialize the answer; the rules (allowed URLs, known event types, the endpoint limit, what can be
retried) live in the services.
"""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import (
    extend_schema_view,
)
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.actors import Actor
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
from webhooks.api.docs import (
    WEBHOOK_DELIVERY_DOCS,
    WEBHOOK_ENDPOINT_DOCS,
)
from webhooks.api.serializers import (
    WebhookDeliverySerializer,
    WebhookEndpointCreateSerializer,
    WebhookEndpointSerializer,
    WebhookEndpointUpdateSerializer,
)
from webhooks.filters import DeliveryFilter
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import (
    delivery_retry,
    endpoint_create,
    endpoint_delete,
    endpoint_rotate_secret,
    endpoint_send_test,
    endpoint_update,
)


def _delivery_accepted(delivery: WebhookDelivery) -> Response:
    return Response(
        {"delivery": WebhookDeliverySerializer(delivery).data}, status=status.HTTP_202_ACCEPTED
    )


@extend_schema_view(**WEBHOOK_ENDPOINT_DOCS)
class WebhookEndpointViewSet(
    CallerScopedMixin, EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet
):
    model = WebhookEndpoint
    list_key = "webhooks"
    resource_key = "webhook"
    serializer_class = WebhookEndpointSerializer
    required_scopes = {
        "list": ["webhooks:read"],
        "retrieve": ["webhooks:read"],
        "create": ["webhooks:write"],
        "partial_update": ["webhooks:write"],
        "destroy": ["webhooks:write"],
        "rotate_secret": ["webhooks:write"],
        "send_test": ["webhooks:write"],
    }

    def caller_queryset(self, principal):
        return WebhookEndpoint.objects.filter(account_id=principal.account.id)

    @staticmethod
    def _with_secret(endpoint: WebhookEndpoint, secret: str) -> dict:
        """The one answer that shows a secret: a creation or a rotation."""
        return {"webhook": WebhookEndpointSerializer(endpoint).data, "secret": secret}

    def create(self, request):
        endpoint, secret = endpoint_create(
            account=request.auth.account,
            actor=Actor.from_request(request),
            **validated(WebhookEndpointCreateSerializer, request),
        )
        return created(
            request,
            self._with_secret(endpoint, secret),
            f"/v1/webhooks/{endpoint.id}",
        )

    def partial_update(self, request, pk: str):
        endpoint = self.get_object()
        if changes := validated(WebhookEndpointUpdateSerializer, request):
            endpoint = endpoint_update(
                endpoint=endpoint, actor=Actor.from_request(request), **changes
            )
        return Response({"webhook": WebhookEndpointSerializer(endpoint).data})

    def destroy(self, request, pk: str):
        endpoint = self.get_object()
        endpoint_id = endpoint.id
        endpoint_delete(endpoint=endpoint, actor=Actor.from_request(request))
        return deleted(endpoint_id)

    @action(detail=True, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        endpoint, secret = endpoint_rotate_secret(
            endpoint=self.get_object(), actor=Actor.from_request(request)
        )
        return Response(self._with_secret(endpoint, secret))

    @action(detail=True, methods=["post"], url_path="test")
    def send_test(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        delivery = endpoint_send_test(endpoint=self.get_object(), actor=Actor.from_request(request))
        return _delivery_accepted(delivery)


@extend_schema_view(**WEBHOOK_DELIVERY_DOCS)
class WebhookDeliveryViewSet(CallerScopedMixin, EnvelopeListMixin, ApiViewSet):
    """``/v1/webhooks/{webhook_id}/deliveries``: one endpoint's deliveries and their retries."""

    model = WebhookDelivery
    list_key = "deliveries"
    serializer_class = WebhookDeliverySerializer
    filterset_classes = {"list": DeliveryFilter}
    lookup_url_kwarg = "delivery_id"
    required_scopes = {"list": ["webhooks:read"], "retry": ["webhooks:write"]}

    def caller_queryset(self, principal):
        endpoint = get_object_or_404(
            WebhookEndpoint, pk=self.kwargs["webhook_id"], account_id=principal.account.id
        )
        return endpoint.deliveries.select_related("event").prefetch_related("attempts")

    @action(detail=True, methods=["post"])
    def retry(self, request, webhook_id: str, delivery_id: str):
        validated(EmptyBodySerializer, request)
        return _delivery_accepted(delivery_retry(delivery=self.get_object()))
