from django.apps import AppConfig
from django.conf import settings


class StripeGatewayConfig(AppConfig):
    name = "stripe_gateway"
    verbose_name = "Card payments (Stripe)"

    def ready(self) -> None:
        # Without the Stripe settings the service runs on the offline means alone: the gateway
        # is not registered, so nothing collects by card and no page offers one.
        if settings.STRIPE_ENABLED:
            from billing.services.gateways import gateway_register
            from stripe_gateway.services.gateway import StripeGateway

            gateway_register(StripeGateway())
