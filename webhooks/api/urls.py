from hosting.api.routers import ApiRouter, id_segment
from webhooks.api.views import WebhookDeliveryViewSet, WebhookEndpointViewSet

router = ApiRouter()
router.register("webhooks", WebhookEndpointViewSet, basename="webhook")
router.register(
    rf"webhooks/{id_segment('webhook_id')}/deliveries",
    WebhookDeliveryViewSet,
    basename="webhook-delivery",
)

urlpatterns = router.urls
