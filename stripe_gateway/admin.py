"""Staff's read-only view of card payments' own records (cards are saved and removed by
customers; charges and notifications come from the services)."""

from django.contrib import admin

from accounts.service_admin import ReadOnlyAdmin
from hosting.money import format_amount
from stripe_gateway.models import (
    PaymentMethod,
    StripeCharge,
    StripeCustomer,
    StripeEvent,
    StripeRefund,
)


@admin.register(PaymentMethod)
class PaymentMethodAdmin(ReadOnlyAdmin):
    list_display = ["id", "account", "brand", "last4", "exp_month", "exp_year", "is_default"]
    list_filter = ["brand", "is_default"]
    list_select_related = ["account"]
    search_fields = ["id", "stripe_id", "last4", "account__name"]


@admin.register(StripeCustomer)
class StripeCustomerAdmin(ReadOnlyAdmin):
    list_display = ["customer_id", "account", "created_at"]
    list_select_related = ["account"]
    search_fields = ["customer_id", "account__name"]


@admin.register(StripeCharge)
class StripeChargeAdmin(ReadOnlyAdmin):
    list_display = ["payment", "payment_intent", "payment_method", "off_session", "created_at"]
    list_filter = ["off_session"]
    search_fields = ["payment__id", "payment_intent"]


@admin.register(StripeEvent)
class StripeEventAdmin(ReadOnlyAdmin):
    list_display = ["id", "type", "object_id", "received_at", "processed_at"]
    list_filter = ["type"]
    search_fields = ["id", "object_id"]
    date_hierarchy = "received_at"


@admin.register(StripeRefund)
class StripeRefundAdmin(ReadOnlyAdmin):
    """Money given back to cards; a ``failed`` one needs staff (Stripe refused it)."""

    list_display = [
        "id",
        "payment",
        "credit_note",
        "refunded",
        "status",
        "refund_id",
        "created_at",
    ]
    list_filter = ["status"]
    list_select_related = ["payment"]
    search_fields = ["payment__id", "credit_note__number", "refund_id"]
    exclude = ["amount"]
    readonly_fields = ["refunded"]

    @admin.display(description="Amount", ordering="amount")
    def refunded(self, obj: StripeRefund) -> str:
        # A refund is in its payment's currency (it gives back part of that payment).
        return format_amount(obj.amount, obj.payment.currency)
