"""Read-side queries of billing: what the API and the dashboard list and show.

Each list's queryset brings what its representation reads (an invoice's lines, a product's
active prices) in one more query per page, whatever the page size: a page of any billing list
is its count, its rows and at most one prefetch (the list goal of ``/v1/servers``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from django.conf import settings
from django.db.models import Prefetch, QuerySet
from django.utils.translation import gettext as _

from accounts.models import Account
from billing.models import (
    BalanceTransaction,
    BillingProfile,
    BillingRunDay,
    Coupon,
    CreditNote,
    Invoice,
    InvoiceStatus,
    Payment,
    PaymentStatus,
    Price,
    Product,
    PromotionCode,
    Subscription,
    SubscriptionStatus,
    TaxRate,
)
from billing.rules.pricing import tax_decision_of
from billing.rules.tax import TaxDecision
from hosting.errors import InvalidState

if TYPE_CHECKING:  # billing.pdf imports WeasyPrint (~2 s): only the download views load it
    from billing.pdf import DocumentSnapshot

NEWEST_FIRST = ("-created_at", "-id")


def products_for_sale() -> QuerySet[Product]:
    """Active products, newest first, each with its active prices in ``active_prices``."""
    prices = Price.objects.filter(active=True).order_by("currency", "unit_amount", "id")
    return (
        Product.objects.filter(active=True)
        .prefetch_related(Prefetch("prices", queryset=prices, to_attr="active_prices"))
        .order_by(*NEWEST_FIRST)
    )


def products_offering_game(slug: str) -> list[str]:
    """The ids of the plans whose ``games`` name this game (a JSON list: read in Python, as
    SQLite has no containment lookup on JSON; plans are few)."""
    return [
        product.pk
        for product in Product.objects.only("pk", "games")
        if isinstance(product.games, list) and slug in product.games
    ]


def products_all() -> QuerySet[Product]:
    """Every product, archived ones too, with every price (``active_prices`` holds all of them
    here, so one representation serves both lists): the staff's catalogue."""
    prices = Price.objects.order_by("-active", "currency", "unit_amount", "id")
    return Product.objects.prefetch_related(
        Prefetch("prices", queryset=prices, to_attr="active_prices")
    ).order_by(*NEWEST_FIRST)


def subscriptions_all() -> QuerySet[Subscription]:
    """Every account's subscriptions, newest first (the staff's view)."""
    return Subscription.objects.order_by(*NEWEST_FIRST)


def subscriptions_of_account(*, account_id: str) -> QuerySet[Subscription]:
    """An account's subscriptions, newest first; never another account's."""
    return subscriptions_all().filter(account_id=account_id)


def tax_rates_all() -> QuerySet[TaxRate]:
    return TaxRate.objects.order_by("country", "region", *NEWEST_FIRST)


def coupons_all() -> QuerySet[Coupon]:
    """Coupons with the products they apply to (one more query per page)."""
    return Coupon.objects.prefetch_related("products").order_by(*NEWEST_FIRST)


def promotion_codes_all() -> QuerySet[PromotionCode]:
    return PromotionCode.objects.order_by(*NEWEST_FIRST)


# Invoices that can still be paid: what the overview and the desk ask the customer to settle.
PAYABLE = (InvoiceStatus.OPEN, InvoiceStatus.UNCOLLECTIBLE)


def invoices_all() -> QuerySet[Invoice]:
    """Every account's invoices with their lines, newest first (the staff API)."""
    return Invoice.objects.prefetch_related("lines").order_by(*NEWEST_FIRST)


def invoices_of_account(*, account_id: str) -> QuerySet[Invoice]:
    """An account's invoices with their lines, newest first; never another account's."""
    return invoices_all().filter(account_id=account_id)


def invoices_payable_of_account(*, account_id: str) -> QuerySet[Invoice]:
    """An account's invoices that can still be paid (open or uncollectible, money still owed),
    the earliest due first, without their lines."""
    return (
        invoices_of_account(account_id=account_id)
        .prefetch_related(None)
        .filter(status__in=PAYABLE, amount_remaining__gt=0)
        .order_by("due_date", "id")
    )


def credit_notes_all() -> QuerySet[CreditNote]:
    """Every account's credit notes, with the invoice each corrects (for its number)."""
    return CreditNote.objects.select_related("invoice").order_by(*NEWEST_FIRST)


def credit_notes_of_account(*, account_id: str) -> QuerySet[CreditNote]:
    return credit_notes_all().filter(account_id=account_id)


def balance_transactions_of_account(*, account_id: str) -> QuerySet[BalanceTransaction]:
    """An account's credit ledger, newest entry first."""
    return BalanceTransaction.objects.filter(account_id=account_id).order_by(*NEWEST_FIRST)


def payments_all() -> QuerySet[Payment]:
    """Every account's payments, newest first (the staff's revenue report)."""
    return Payment.objects.order_by(*NEWEST_FIRST)


def payments_of_account(*, account_id: str) -> QuerySet[Payment]:
    return Payment.objects.filter(account_id=account_id).order_by(*NEWEST_FIRST)


def billing_profile_of(account: Account) -> BillingProfile:
    """The account's billing profile; an empty, unsaved one until anything is set (or the first
    invoice fixes its currency)."""
    return BillingProfile.objects.filter(account=account).first() or BillingProfile(account=account)


def tax_decision(account: Account) -> TaxDecision:
    """The tax of a sale to ``account`` today, from its billing profile and the active rates of
    its country (``rules.pricing.tax_decision_of`` decides)."""
    profile = billing_profile_of(account)
    country = (profile.country or settings.BILLING_SELLER["country"]).upper()
    rates = TaxRate.objects.filter(active=True, country=country).values_list(
        "country", "region", "percentage", "inclusive"
    )
    return tax_decision_of(profile, list(rates))


# --- The staff home's billing panel ------------------------------------------------------------


def billing_today(*, now: datetime, failures: int = 5) -> dict:
    """Today (UTC) in billing: the job's passes (``BillingRunDay``), the payments that
    succeeded and failed since midnight (the last few failures with their reasons), and what
    waits on customers: open invoices past their due date, subscriptions past due or unpaid
    (suspended)."""
    midnight = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    payments = Payment.objects.filter(created_at__gte=midnight)
    return {
        "run": BillingRunDay.objects.filter(day=midnight.date()).first(),
        "succeeded": payments.filter(status=PaymentStatus.SUCCEEDED).count(),
        "failed": payments.filter(status=PaymentStatus.FAILED).count(),
        "failures": list(
            payments.filter(status=PaymentStatus.FAILED)
            .select_related("account", "invoice")
            .order_by("-created_at")[:failures]
        ),
        "overdue_invoices": Invoice.objects.filter(
            status=InvoiceStatus.OPEN, due_date__lt=now
        ).count(),
        "past_due": Subscription.objects.filter(status=SubscriptionStatus.PAST_DUE).count(),
        "unpaid": Subscription.objects.filter(status=SubscriptionStatus.UNPAID).count(),
    }


# --- Documents as their PDFs show them (billing/pdf.py) --------------------------------------


def _day(moment: datetime | None):
    return None if moment is None else moment.astimezone(UTC).date()


def _percentage(invoice: Invoice) -> str:
    return format(invoice.tax_percentage.normalize(), "f")


def invoice_document(invoice: Invoice) -> DocumentSnapshot:
    """A finalized invoice as its PDF shows it: everything from what was frozen when it was
    finalized (lines, totals, the buyer and seller of that day), nothing read from settings or
    the profile now. A draft has no PDF until it is finalized (``InvalidState``)."""
    if invoice.status == InvoiceStatus.DRAFT:
        raise InvalidState(
            _("A draft invoice has no PDF yet: it is drawn once the invoice is finalized."),
            details={"status": invoice.status},
        )
    taxed = invoice.tax or invoice.tax_percentage
    # In the language the PDF is drawn in (billing.pdf); the rate as stored, e.g. 19 or 5.5.
    label = (
        # Translators: a tax total's label on an invoice; "%%" is a percent sign.
        _("Tax %(rate)s%% (included)")
        if invoice.tax_inclusive
        # Translators: a tax total's label on an invoice; "%%" is a percent sign.
        else _("Tax %(rate)s%%")
    ) % {"rate": _percentage(invoice)}
    return {
        "kind": "invoice",
        "number": invoice.number or "",
        "issued_at": invoice.finalized_at or invoice.created_at,
        "due_date": _day(invoice.due_date),
        "currency": invoice.currency,
        "seller": invoice.seller,
        "buyer": invoice.buyer,
        "lines": [
            {
                "description": line.description,
                "period_start": line.period_start,
                "period_end": line.period_end,
                "quantity": line.quantity,
                "unit_amount": line.unit_amount,
                "amount": line.amount,
                "proration": line.proration,
                "tax_amount": line.tax_amount,
            }
            for line in invoice.lines.all()
        ],
        "subtotal": invoice.subtotal,
        "discount": invoice.discount,
        "tax": [{"label": label, "amount": invoice.tax}] if taxed else [],
        "total": invoice.total,
        "amount_paid": invoice.amount_paid,
        "amount_remaining": invoice.amount_remaining,
        "notes": list(invoice.notes),
    }


def credit_note_document(credit_note: CreditNote) -> DocumentSnapshot:
    """A credit note as its PDF shows it: one line crediting the invoice it corrects."""
    invoice = credit_note.invoice
    return {
        "kind": "credit_note",
        "number": credit_note.number,
        "issued_at": credit_note.created_at,
        "due_date": None,
        "currency": credit_note.currency,
        "seller": credit_note.seller,
        "buyer": credit_note.buyer,
        "lines": [
            {
                "description": _("Credit on invoice %(number)s") % {"number": invoice.number},
                "period_start": invoice.period_start,
                "period_end": invoice.period_end,
                "quantity": 1,
                "unit_amount": credit_note.amount,
                "amount": credit_note.amount,
                "proration": False,
                "tax_amount": 0,
            }
        ],
        "subtotal": credit_note.amount,
        "discount": 0,
        "tax": [],
        "total": credit_note.amount,
        "amount_paid": 0,
        "amount_remaining": 0,
        "notes": [credit_note.memo] if credit_note.memo else [],
        "original_invoice_number": invoice.number or "",
        "reason": credit_note.get_reason_display(),
    }
