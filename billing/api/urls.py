from django.urls import path

from billing.api.views import (
    AdminBalanceTransactionViewSet,
    AdminBillingProfileViewSet,
    AdminCreditNoteViewSet,
    AdminInvoiceViewSet,
    BalanceTransactionViewSet,
    BalanceViewSet,
    BillingProfileViewSet,
    CreditNoteViewSet,
    InvoiceViewSet,
    PaymentViewSet,
    ProductViewSet,
)
from hosting.api.routers import ApiRouter, id_segment

router = ApiRouter()
router.register("products", ProductViewSet, basename="product")
router.register("invoices", InvoiceViewSet, basename="invoice")
router.register("credit-notes", CreditNoteViewSet, basename="credit-note")
router.register("balance-transactions", BalanceTransactionViewSet, basename="balance-transaction")
router.register("payments", PaymentViewSet, basename="payment")
router.register("admin/invoices", AdminInvoiceViewSet, basename="admin-invoice")
router.register("admin/credit-notes", AdminCreditNoteViewSet, basename="admin-credit-note")
router.register(
    rf"admin/customers/{id_segment('customer_id')}/balance-transactions",
    AdminBalanceTransactionViewSet,
    basename="customer-balance-transaction",
)

urlpatterns = [
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
