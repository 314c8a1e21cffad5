"""Dashboard pages of Billing: the overview, invoices (with their PDFs and "pay with credit"),
credit notes' PDFs, the credit ledger and the billing profile.

Views parse input, call one service of billing/services with the signed-in person as the actor,
and render; amounts are shown with ``hosting.money.format_amount``. Every document is looked up
within ``request.account``, so another account's invoices and credit notes answer 404.
Reading needs ``billing:read`` in the role's scopes (else 404, like a missing right; the
navigation hides the section then); paying and saving the profile need ``billing:write``, and a
suspended account is read-only.
"""

from datetime import UTC, datetime, time
from functools import cached_property

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.cache import patch_cache_control
from django.utils.http import content_disposition_header
from django.views import View
from django.views.generic import FormView, ListView, TemplateView

from accounts.dashboard import AreaPageMixin
from billing.clock import billing_now
from billing.forms import (
    BalanceListFilter,
    BillingProfileForm,
    InvoiceListFilter,
    PaymentListFilter,
)
from billing.models import CreditNote, Invoice, InvoiceStatus
from billing.selectors import (
    PAYABLE,
    balance_transactions_of_account,
    billing_profile_of,
    credit_note_document,
    credit_notes_of_account,
    invoice_document,
    invoices_of_account,
    invoices_payable_of_account,
    payments_of_account,
)
from billing.services import balance_of, invoice_pay_with_credit
from billing.services.gateways import PaymentNotSupported, card_gateway, collection_gateways
from billing.services.invoices import GATEWAY_LABELS
from billing.services.profile import billing_profile_update
from hosting.dashboard.lists import ListControlsMixin
from hosting.errors import ApplicationError
from hosting.money import format_amount

# The overview lists this many; the invoices page has the rest (``?status=open``).
OVERVIEW_INVOICES = 10


def moment_text(moment: datetime) -> str:
    """A period's end as invoices print it: the day, with the time only when not midnight
    (monthly periods read as days, hourly ones need the hour)."""
    moment = moment.astimezone(UTC)
    if moment.time() == time.min:
        return moment.date().isoformat()
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def period_text(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:
        return ""
    return f"{moment_text(start)} \N{EN DASH} {moment_text(end)}"


def payable(invoice: Invoice) -> bool:
    return invoice.status in PAYABLE and invoice.amount_remaining > 0


def bank_account_of(invoice: Invoice) -> dict | None:
    """The seller's account to transfer to: the one the invoice was issued with (its PDF
    prints that one), else today's, for an invoice issued before the settings had one."""
    return invoice.seller.get("bank_account") or settings.BILLING_SELLER.get("bank_account")


class BillingPageMixin(AreaPageMixin):
    """A Billing page: readable with ``billing:read``, changed only with ``billing:write``."""

    area = "billing"

    @property
    def refused_url(self) -> str:
        return reverse("billing")

    @cached_property
    def profile(self):
        return billing_profile_of(self.account)

    def money(self, amount: int, currency: str | None = None) -> str:
        """``amount`` in ``currency``, or in the account's billing currency."""
        return format_amount(amount, currency or self.profile.currency)

    @cached_property
    def cards_refused(self) -> str:
        """Why this account cannot pay by card (no card gateway here, or staff chose other
        means for it); empty when it can."""
        try:
            # The profile if this page read it already; else card_gateway reads only the
            # account's gateway list, and only when the service has cards at all.
            card_gateway(account=self.account, profile=self.__dict__.get("profile"))
        except PaymentNotSupported as refusal:
            return refusal.message
        return ""

    def get_context_data(self, **kwargs):
        return super().get_context_data(
            cards_offered=not self.cards_refused,
            cards_page=settings.STRIPE_ENABLED,
            **kwargs,
        )


class InvoiceObjectMixin(BillingPageMixin):
    """A page of one invoice of the current account, found by ``invoice_id``."""

    @cached_property
    def invoice(self) -> Invoice:
        invoices = invoices_of_account(account_id=self.account.id)
        return get_object_or_404(invoices, id=self.kwargs["invoice_id"])

    @property
    def refused_url(self) -> str:
        return reverse("billing_invoice", args=[self.kwargs["invoice_id"]])


# --- The overview ----------------------------------------------------------------------------


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


# --- Invoices --------------------------------------------------------------------------------


class InvoiceListView(ListControlsMixin, BillingPageMixin, ListView):
    """The account's invoices, found by their number, filtered by status."""

    template_name = "billing/invoice_list.html"
    context_object_name = "invoices"
    search_fields = ("number", "=id")
    search_label = "Invoice number"
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


class PaymentListView(ListControlsMixin, BillingPageMixin, ListView):
    """The account's payment history: every attempt (a declined card, one still being
    confirmed, a refund), found by its invoice's number or its reference."""

    template_name = "billing/payment_list.html"
    context_object_name = "payments"
    search_fields = ("invoice__number", "reference", "=id")
    search_label = "Invoice number or reference"
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
                "tax_label": f"Tax {percentage}%"
                + (" (included)" if invoice.tax_inclusive else ""),
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
            messages.success(request, f"Invoice {invoice.number} is paid with your credit.")
        else:
            remaining = self.money(invoice.amount_remaining, invoice.currency)
            messages.success(
                request,
                f"Your credit paid part of invoice {invoice.number}; {remaining} remains to be "
                "paid.",
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
                "A draft invoice has no PDF yet: it gets its number and its PDF when it is "
                "finalized.",
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


# --- The credit ledger -----------------------------------------------------------------------


class BalanceView(ListControlsMixin, BillingPageMixin, ListView):
    """The account's credit: every entry of the ledger, newest first, naming its cause."""

    template_name = "billing/balance.html"
    context_object_name = "entries"
    search_fields = ("description",)
    search_label = "Description or number"
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


# --- The billing profile ---------------------------------------------------------------------


class BillingProfileView(BillingPageMixin, FormView):
    """Who invoices are made out to; read-only for those who may not change it. The tax
    exemption (staff set it) and the currency (the first invoice fixes it) are only shown."""

    template_name = "billing/profile.html"

    @property
    def refused_url(self) -> str:
        return reverse("billing_profile")

    def get_form(self, form_class=None):
        data = self.request.POST if self.request.method == "POST" else None
        return BillingProfileForm.of(self.profile, data, read_only=not self.can_write)

    def form_valid(self, form):
        changes = form.changes()
        if not changes:
            messages.info(self.request, "Nothing was changed.")
            return redirect("billing_profile")
        try:
            billing_profile_update(account=self.account, changes=changes, actor=self.actor())
        except ApplicationError as error:
            return self.refused(error, form=form)
        messages.success(
            self.request, "Saved the billing profile: invoices finalized from now on show it."
        )
        return redirect("billing_profile")

    def get_context_data(self, **kwargs):
        return super().get_context_data(profile=self.profile, **kwargs)
