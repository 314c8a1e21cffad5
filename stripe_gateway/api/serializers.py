"""Bodies and answers of the payment methods API."""

from rest_framework import serializers

from hosting.api.serializers import RepresentedBy, StrictInputSerializer
from stripe_gateway.models import PaymentMethod
from stripe_gateway.representations import payment_method_representation


class CardSerializer(serializers.Serializer):
    brand = serializers.CharField(read_only=True, help_text="`visa`, `mastercard`, `amex`, …")
    last4 = serializers.CharField(read_only=True)
    exp_month = serializers.IntegerField(read_only=True)
    exp_year = serializers.IntegerField(read_only=True)


class PaymentMethodSerializer(RepresentedBy, serializers.ModelSerializer):
    represent = staticmethod(payment_method_representation)

    type = serializers.CharField(read_only=True, help_text="`card`")
    card = CardSerializer(read_only=True)

    class Meta:
        model = PaymentMethod
        fields = ["id", "type", "card", "is_default", "created_at"]
        read_only_fields = fields


class PaymentMethodCreateSerializer(StrictInputSerializer):
    setup_intent = serializers.CharField(
        max_length=255,
        help_text="The SetupIntent (`seti_…`) the browser confirmed with Stripe.js.",
    )


class SetupIntentSerializer(serializers.Serializer):
    id = serializers.CharField(read_only=True)
    client_secret = serializers.CharField(read_only=True, help_text="For Stripe.js only.")


class SetupIntentAnswerSerializer(serializers.Serializer):
    setup_intent = SetupIntentSerializer(read_only=True)
    publishable_key = serializers.CharField(read_only=True)


PAYMENT_METHOD_EXAMPLE = {
    "id": "pm_6Vd2Kq8Lw3Nz7Tc1Rb5Xy9Hm",
    "type": "card",
    "card": {"brand": "visa", "last4": "4242", "exp_month": 12, "exp_year": 2030},
    "is_default": True,
    "created_at": "2026-11-20T10:15:00Z",
}
SETUP_INTENT_EXAMPLE = {
    "setup_intent": {
        "id": "seti_1QhX2vLkdIwHu7ixR4mD9c0P",
        "client_secret": "seti_1QhX2vLkdIwHu7ixR4mD9c0P_secret_Rb8Nz1Kd5Wf3Hy",
    },
    "publishable_key": "pk_live_51H…",
}
