from hosting.api.routers import ApiRouter
from stripe_gateway.api.views import PaymentMethodViewSet

router = ApiRouter()
router.register("payment-methods", PaymentMethodViewSet, basename="payment-method")
urlpatterns = router.urls
