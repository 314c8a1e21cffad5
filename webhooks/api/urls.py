from rest_framework.routers import SimpleRouter

from webhooks.api.views import WebhookDeliveryViewSet, WebhookEndpointViewSet

router = SimpleRouter(trailing_slash=False)
router.register("webhooks", WebhookEndpointViewSet, basename="webhook")
router.register(
    r"webhooks/(?P<webhook_id>[^/.]+)/deliveries",
    WebhookDeliveryViewSet,
    basename="webhook-delivery",
)

urlpatterns = router.urls
