from django.urls import path

from billing.api.views import (
    AdminBalanceTransactionViewSet,
    AdminBillingClockViewSet,
    AdminBillingProfileViewSet,
    AdminCouponViewSet,
    AdminCreditNoteViewSet,
    AdminInvoiceViewSet,
    AdminPriceViewSet,
    AdminProductViewSet,
    AdminPromotionCodeViewSet,
    AdminSubscriptionViewSet,
    AdminTaxRateViewSet,
    BalanceTransactionViewSet,
    BalanceViewSet,
    BillingProfileViewSet,
    CouponValidationViewSet,
    CreditNoteViewSet,
    InvoiceViewSet,
    PaymentViewSet,
    ProductViewSet,
    SubscriptionViewSet,
)
from hosting.api.routers import ApiRouter, id_segment

router = ApiRouter()
router.register("products", ProductViewSet, basename="product")
router.register("subscriptions", SubscriptionViewSet, basename="subscription")
router.register("invoices", InvoiceViewSet, basename="invoice")
router.register("credit-notes", CreditNoteViewSet, basename="credit-note")
router.register("balance-transactions", BalanceTransactionViewSet, basename="balance-transaction")
router.register("payments", PaymentViewSet, basename="payment")
router.register("admin/invoices", AdminInvoiceViewSet, basename="admin-invoice")
router.register("admin/subscriptions", AdminSubscriptionViewSet, basename="admin-subscription")
router.register("admin/products", AdminProductViewSet, basename="admin-product")
router.register("admin/prices", AdminPriceViewSet, basename="admin-price")
router.register("admin/tax-rates", AdminTaxRateViewSet, basename="admin-tax-rate")
router.register("admin/coupons", AdminCouponViewSet, basename="admin-coupon")
router.register("admin/promotion-codes", AdminPromotionCodeViewSet, basename="admin-promotion-code")
router.register("admin/credit-notes", AdminCreditNoteViewSet, basename="admin-credit-note")
router.register(
    rf"admin/customers/{id_segment('customer_id')}/balance-transactions",
    AdminBalanceTransactionViewSet,
    basename="customer-balance-transaction",
)

urlpatterns = [
    path(
        "coupons/validate",
        CouponValidationViewSet.as_view({"post": "create"}),
        name="coupon-validation",
    ),
    path(
        "admin/customers/<id:customer_id>/billing-clock",
        AdminBillingClockViewSet.as_view({"get": "retrieve", "post": "create"}),
        name="customer-billing-clock",
    ),
    path("balance", BalanceViewSet.as_view({"get": "retrieve"}), name="balance"),
    path(
        "billing-profile",
        BillingProfileViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        name="billing-profile",
    ),
    path(
        "admin/customers/<id:customer_id>/billing-profile",
        AdminBillingProfileViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        name="customer-billing-profile",
    ),
    *router.urls,
]
