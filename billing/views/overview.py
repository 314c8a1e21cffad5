"""The Billing overview: the credit balance, the invoices waiting to be paid, and the way to
everything else.
"""

from django.views.generic import TemplateView

from billing.clock import billing_now
from billing.mixins import BillingPageMixin
from billing.selectors import invoices_payable_of_account
from billing.services import balance_of

# The overview lists this many; the invoices page has the rest (``?status=open``).
OVERVIEW_INVOICES = 10


class BillingOverviewView(BillingPageMixin, TemplateView):
    """The credit balance, the invoices waiting to be paid, and the way to everything else."""

    template_name = "billing/overview.html"

    def get_context_data(self, **kwargs):
        balance = balance_of(self.account)
        now = billing_now(self.account)
        waiting = invoices_payable_of_account(account_id=self.account.id)
        invoices = list(waiting[: OVERVIEW_INVOICES + 1])
        for invoice in invoices:
            invoice.due_shown = self.money(invoice.amount_remaining, invoice.currency)
            invoice.overdue = invoice.due_date is not None and invoice.due_date < now
            invoice.credit_covers = min(balance, invoice.amount_remaining)
            invoice.credit_covers_shown = self.money(invoice.credit_covers, invoice.currency)
        return super().get_context_data(
            balance=balance,
            balance_shown=self.money(balance) if self.profile.currency else "",
            profile=self.profile,
            invoices=invoices[:OVERVIEW_INVOICES],
            more_invoices=len(invoices) > OVERVIEW_INVOICES,
            **kwargs,
        )
