"""Invoices' pages: the list, one invoice (and paying it from the credit), and the PDFs of
invoices and credit notes.
"""

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.cache import patch_cache_control
from django.utils.http import content_disposition_header
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views import View
from django.views.generic import ListView, TemplateView

from billing.clock import billing_now
from billing.forms import InvoiceListFilter
from billing.mixins import BillingPageMixin, InvoiceObjectMixin, tax_label
from billing.models import CreditNote, Invoice, InvoiceStatus
from billing.rules.periods import period_text
from billing.selectors import (
    PAYABLE,
    credit_note_document,
    credit_notes_of_account,
    invoice_document,
    invoices_of_account,
    payments_of_account,
)
from billing.services import balance_of, invoice_pay_with_credit
from billing.services.gateways import collection_gateways
from billing.services.notices import GATEWAY_LABELS
from hosting.dashboard.lists import ListControlsMixin
from hosting.errors import ApplicationError


def payable(invoice: Invoice) -> bool:
    return invoice.status in PAYABLE and invoice.amount_remaining > 0


def bank_account_of(invoice: Invoice) -> dict | None:
    """The seller's account to transfer to: the one the invoice was issued with (its PDF
    prints that one), else today's, for an invoice issued before the settings had one."""
    return invoice.seller.get("bank_account") or settings.BILLING_SELLER.get("bank_account")


class InvoiceListView(ListControlsMixin, BillingPageMixin, ListView):
    """The account's invoices, found by their number, filtered by status."""

    template_name = "billing/invoice_list.html"
    context_object_name = "invoices"
    search_fields = ("number", "=id")
    search_label = gettext_lazy("Invoice number")
    filterset_class = InvoiceListFilter
    sort_fields = {"created_at": "created_at", "due_date": "due_date", "total": "total"}
    default_sort = "-created_at"

    def get_base_queryset(self):
        # The list shows totals, not lines: no need for the selector's prefetch of them.
        return invoices_of_account(account_id=self.account.id).prefetch_related(None)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        for invoice in context["invoices"]:
            invoice.total_shown = self.money(invoice.total, invoice.currency)
            invoice.remaining_shown = self.money(invoice.amount_remaining, invoice.currency)
        return context


class InvoiceDetailView(InvoiceObjectMixin, TemplateView):
    """An invoice as it was issued: lines, totals, buyer and seller, notes; then its payments
    and credit notes, and the PDF. While something is owed, every way to pay it that applies
    to the account: its credit (all or part), a card when the account pays by card, and a bank
    transfer when it may and the seller has a bank account; whom to ask when none does."""

    template_name = "billing/invoice_detail.html"
    http_method_names = ["get", "head", "options"]

    def get_context_data(self, **kwargs):
        invoice = self.invoice

        def money(amount: int) -> str:
            return self.money(amount, invoice.currency)

        lines = list(invoice.lines.all())  # prefetched by the selector
        for line in lines:
            line.period = period_text(line.period_start, line.period_end)
            line.unit_amount_shown = money(line.unit_amount)
            line.amount_shown = money(line.amount)
            line.discount_shown = money(-line.discount_amount) if line.discount_amount else ""
            line.tax_shown = money(line.tax_amount)
        payments = list(payments_of_account(account_id=self.account.id).filter(invoice=invoice))
        for payment in payments:
            payment.amount_shown = money(payment.amount)
            payment.gateway_shown = GATEWAY_LABELS.get(payment.gateway, payment.gateway)
        credit_notes = list(
            credit_notes_of_account(account_id=self.account.id).filter(invoice=invoice)
        )
        for credit_note in credit_notes:
            credit_note.amount_shown = money(credit_note.amount)
        is_payable = payable(invoice)
        balance = balance_of(self.account) if is_payable else 0
        bank_transfer = self.bank_transfer(invoice) if is_payable else None
        cards_offered = not self.cards_refused
        percentage = format(invoice.tax_percentage.normalize(), "f")
        return super().get_context_data(
            invoice=invoice,
            lines=lines,
            totals={
                "subtotal": money(invoice.subtotal),
                "discount": money(-invoice.discount) if invoice.discount else "",
                "tax": money(invoice.tax),
                "tax_label": tax_label(percentage, inclusive=invoice.tax_inclusive),
                "total": money(invoice.total),
                "amount_paid": money(invoice.amount_paid),
                "amount_credited": money(invoice.amount_credited)
                if invoice.amount_credited
                else "",
                "amount_remaining": money(invoice.amount_remaining),
            },
            period=period_text(invoice.period_start, invoice.period_end),
            overdue=is_payable
            and invoice.due_date is not None
            and invoice.due_date < billing_now(self.account),
            payments=payments,
            credit_notes=credit_notes,
            payable=is_payable,
            balance_shown=money(balance) if balance else "",
            credit_covers=money(min(balance, invoice.amount_remaining)) if balance else "",
            credit_pays_all=balance >= invoice.amount_remaining,
            bank_transfer=bank_transfer,
            no_way_to_pay=is_payable and not (balance or bank_transfer or cards_offered),
            **kwargs,
        )

    def bank_transfer(self, invoice: Invoice) -> dict | None:
        """The seller's account and the reference to use, when the account pays by transfer
        (staff may have left it out of the account's gateways) and the seller has one."""
        gateways = collection_gateways(self.account.id, profile=self.profile)
        if not any(each.name == "bank_transfer" for each in gateways):
            return None
        account = bank_account_of(invoice)
        if not account:
            return None
        return {**account, "reference": invoice.number}


class InvoicePayWithCreditView(InvoiceObjectMixin, View):
    """The "Pay with credit" button: the account's credit pays what it can of the invoice."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        try:
            invoice = invoice_pay_with_credit(invoice=self.invoice, actor=self.actor())
        except ApplicationError as error:
            return self.refused(error, back_to=self.refused_url)
        if invoice.status == InvoiceStatus.PAID:
            messages.success(
                request,
                _("Invoice %(number)s is paid with your credit.") % {"number": invoice.number},
            )
        else:
            remaining = self.money(invoice.amount_remaining, invoice.currency)
            messages.success(
                request,
                _("Your credit paid part of invoice %(number)s; %(remaining)s remains to be paid.")
                % {"number": invoice.number, "remaining": remaining},
            )
        return redirect(self.refused_url)


def pdf_response(document: bytes, number: str) -> HttpResponse:
    """A document's PDF, downloaded as ``<number>.pdf`` and kept by no shared cache."""
    response = HttpResponse(document, content_type="application/pdf")
    response["Content-Disposition"] = content_disposition_header(True, f"{number}.pdf")
    patch_cache_control(response, private=True)
    return response


def render_pdf(document) -> bytes:
    # Imported here: WeasyPrint takes seconds to load, and only these two pages draw PDFs.
    from billing.pdf import render_document_pdf

    return render_document_pdf(document)


class InvoicePdfView(InvoiceObjectMixin, View):
    """The invoice's PDF; a draft has none until it is finalized."""

    http_method_names = ["get", "head"]

    def get(self, request, *args, **kwargs):
        invoice = self.invoice
        if invoice.status == InvoiceStatus.DRAFT:
            messages.error(
                request,
                _(
                    "A draft invoice has no PDF yet: it gets its number and its PDF when it is "
                    "finalized."
                ),
            )
            return redirect(self.refused_url)
        return pdf_response(render_pdf(invoice_document(invoice)), invoice.number)


class CreditNotePdfView(BillingPageMixin, View):
    """A credit note's PDF."""

    http_method_names = ["get", "head"]

    def get(self, request, *args, **kwargs):
        credit_note: CreditNote = get_object_or_404(
            credit_notes_of_account(account_id=self.account.id), id=kwargs["credit_note_id"]
        )
        document = render_pdf(credit_note_document(credit_note))
        return pdf_response(document, credit_note.number)
