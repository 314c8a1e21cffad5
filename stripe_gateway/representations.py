"""The public representations of card payments' resources."""

from typing import Any

from hosting.representations import timestamp
from stripe_gateway.models import PaymentMethod


def payment_method_representation(method: PaymentMethod) -> dict[str, Any]:
    """A saved card as a person recognises it; never its number."""
    return {
        "id": method.id,
        "type": "card",
        "card": {
            "brand": method.brand,
            "last4": method.last4,
            "exp_month": method.exp_month,
            "exp_year": method.exp_year,
        },
        "is_default": method.is_default,
        "created_at": timestamp(method.created_at),
    }
