"""The payments page: every payment of the account, by card or transfer, with its invoice."""

from django.utils.translation import gettext_lazy as _
from django.views.generic import ListView

from billing.forms import PaymentListFilter
from billing.mixins import BillingPageMixin
from billing.selectors import payments_of_account
from billing.services.notices import GATEWAY_LABELS
from hosting.dashboard.lists import ListControlsMixin


class PaymentListView(ListControlsMixin, BillingPageMixin, ListView):
    """The account's payment history: every attempt (a declined card, one still being
    confirmed, a refund), found by its invoice's number or its reference."""

    template_name = "billing/payment_list.html"
    context_object_name = "payments"
    search_fields = ("invoice__number", "reference", "=id")
    search_label = _("Invoice number or reference")
    filterset_class = PaymentListFilter
    sort_fields = {"created_at": "created_at", "amount": "amount"}
    default_sort = "-created_at"

    def get_base_queryset(self):
        return payments_of_account(account_id=self.account.id).select_related("invoice")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        for payment in context["payments"]:
            payment.amount_shown = self.money(payment.amount, payment.currency)
            payment.refunded_shown = self.money(payment.amount_refunded, payment.currency)
            payment.gateway_shown = GATEWAY_LABELS.get(payment.gateway, payment.gateway)
        return context
