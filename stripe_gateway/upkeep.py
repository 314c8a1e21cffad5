from django.conf import settings

from stripe_gateway.services.charges import charges_reconcile
from stripe_gateway.services.refunds import refunds_resend


def run() -> dict[str, int]:
    if not settings.STRIPE_ENABLED:
        return {}
    return {
        "card payments reconciled": charges_reconcile(),
        "card refunds sent again": refunds_resend(),
    }
