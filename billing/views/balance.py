"""The credit ledger's page: what was added to and taken from the account's credit."""

from django.utils.translation import gettext_lazy as _
from django.views.generic import ListView

from billing.forms import BalanceListFilter
from billing.mixins import BillingPageMixin
from billing.selectors import balance_transactions_of_account
from billing.services import balance_of
from hosting.dashboard.lists import ListControlsMixin


class BalanceView(ListControlsMixin, BillingPageMixin, ListView):
    """The account's credit: every entry of the ledger, newest first, naming its cause."""

    template_name = "billing/balance.html"
    context_object_name = "entries"
    search_fields = ("description",)
    search_label = _("Description or number")
    filterset_class = BalanceListFilter
    sort_fields = {"created_at": "created_at"}
    default_sort = "-created_at"

    def get_base_queryset(self):
        entries = balance_transactions_of_account(account_id=self.account.id)
        return entries.select_related("invoice", "credit_note")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        for entry in context["entries"]:
            entry.amount_shown = self.money(entry.amount, entry.currency)
            entry.ending_balance_shown = self.money(entry.ending_balance, entry.currency)
        balance = balance_of(self.account)
        context["balance_shown"] = self.money(balance) if self.profile.currency else ""
        return context
