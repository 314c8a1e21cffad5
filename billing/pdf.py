"""Invoice and credit-note PDFs, drawn by WeasyPrint from a Django template.

The input is a finalized document's snapshot, a plain dict (``DocumentSnapshot`` below): the
service builds it when the invoice or credit note is finalized, seller details from
``settings.BILLING_SELLER`` included, so a PDF drawn years later shows what was issued even if
the settings, the customer's profile or the price have changed since. This module reads no
settings and no database.

Nothing is fetched while drawing: the stylesheet is part of the template, text is set in the
fonts fontconfig finds (Debian's DejaVu), and the URL fetcher refuses every URL that is not an
inline ``data:`` one, so neither a customer-controlled string nor a template edit can make the
renderer reach the network or read a local file.
"""

from datetime import UTC, date, datetime
from typing import Literal, NotRequired, TypedDict

from django.template.loader import get_template
from django.utils.translation import gettext_lazy as _
from weasyprint import HTML
from weasyprint.urls import URLFetcher

from hosting.money import format_amount


class BankAccountSnapshot(TypedDict):
    """Where a customer transfers the money (``BILLING_SELLER_IBAN`` and its neighbours)."""

    account_holder: str
    iban: str  # in groups of four, as printed
    bic: str  # may be empty


class SellerSnapshot(TypedDict):
    """Who issues the document (from ``settings.BILLING_SELLER`` at finalization)."""

    name: str
    address_lines: list[str]
    country: str  # ISO 3166-1 alpha-2
    vat_id: str  # may be empty
    email: str
    # Absent when the seller had no bank account in the settings that day.
    bank_account: NotRequired[BankAccountSnapshot]


class BuyerSnapshot(TypedDict):
    """Who the document is issued to (the account's billing profile at finalization)."""

    name: str
    address_lines: list[str]
    country: str  # ISO 3166-1 alpha-2
    vat_id: str  # may be empty


class LineSnapshot(TypedDict):
    """One line item; every amount in minor units of the document's currency."""

    description: str
    period_start: date | datetime | None
    period_end: date | datetime | None
    quantity: int
    unit_amount: int
    amount: int  # quantity * unit_amount, before the line's discount; negative for a credit
    proration: bool
    tax_amount: int


class TaxSnapshot(TypedDict):
    """One tax total, e.g. ``{"label": "VAT 21%", "amount": 2100}``."""

    label: str
    amount: int


class DocumentSnapshot(TypedDict):
    """Everything a finalized invoice or credit note shows, frozen at finalization.

    Amounts are integers in the currency's minor units (cents; yen for JPY). Datetimes are
    timezone-aware and printed in UTC. ``notes`` are printed as they are, one paragraph each
    (the reverse-charge statement, payment instructions). A credit note carries the number of
    the invoice it corrects and its reason; an invoice carries neither.
    """

    kind: Literal["invoice", "credit_note"]
    number: str
    issued_at: datetime
    due_date: date | None  # None on a credit note
    currency: str  # ISO 4217, one of hosting.money.SUPPORTED_CURRENCIES
    seller: SellerSnapshot
    buyer: BuyerSnapshot
    lines: list[LineSnapshot]
    subtotal: int
    discount: int  # a positive amount taken off the subtotal; 0 when none
    tax: list[TaxSnapshot]
    total: int
    amount_paid: int  # printed on invoices only; 0 on a credit note
    amount_remaining: int  # printed on invoices only ("Amount due"); 0 on a credit note
    notes: list[str]
    original_invoice_number: NotRequired[str]
    reason: NotRequired[str]


# In the language active when the PDF is drawn: the page's for a download, the recipient's
# for an e-mail's attachment.
_TITLES = {"invoice": _("Invoice"), "credit_note": _("Credit note")}


def render_document_pdf(document: DocumentSnapshot) -> bytes:
    """Return the PDF of a finalized invoice or credit note, from its snapshot."""
    html = get_template("billing/pdf/document.html").render(_template_context(document))
    return HTML(string=html, url_fetcher=offline_url_fetcher()).write_pdf()


def offline_url_fetcher() -> URLFetcher:
    """A fetcher that only decodes inline ``data:`` URLs and refuses every other URL.

    Refused URLs raise ``ValueError``; WeasyPrint logs it and draws the document without the
    resource, so a stray reference never blocks an invoice.
    """
    return URLFetcher(allowed_protocols={"data"}, allow_redirects=False)


def _template_context(document: DocumentSnapshot) -> dict[str, object]:
    currency = document["currency"]

    def money(amount: int) -> str:
        return format_amount(amount, currency)

    return {
        "title": _TITLES[document["kind"]],
        "document": document,
        "issued_on": document["issued_at"].astimezone(UTC).date().isoformat(),
        "due_on": document["due_date"].isoformat() if document["due_date"] else "",
        "lines": [
            {
                "description": line["description"],
                "period": _format_period(line["period_start"], line["period_end"]),
                "proration": line["proration"],
                "quantity": line["quantity"],
                "unit_amount": money(line["unit_amount"]),
                "tax_amount": money(line["tax_amount"]),
                "amount": money(line["amount"]),
            }
            for line in document["lines"]
        ],
        "subtotal": money(document["subtotal"]),
        "discount": money(-document["discount"]) if document["discount"] else "",
        "tax": [{"label": tax["label"], "amount": money(tax["amount"])} for tax in document["tax"]],
        "total": money(document["total"]),
        "amount_paid": money(document["amount_paid"]),
        "amount_remaining": money(document["amount_remaining"]),
        "bank_transfer": _bank_transfer(document),
    }


def _bank_transfer(document: DocumentSnapshot) -> BankAccountSnapshot | None:
    """The seller's account to transfer to, while the invoice is still owed: on a paid one
    the instructions could only invite a second payment."""
    if document["kind"] != "invoice" or document["amount_remaining"] <= 0:
        return None
    return document["seller"].get("bank_account")


def _format_period(start: date | datetime | None, end: date | datetime | None) -> str:
    if start is None or end is None:
        return ""
    return f"{_format_moment(start)} \N{EN DASH} {_format_moment(end)}"


def _format_moment(moment: date | datetime) -> str:
    """A date as ``2026-03-01``; a datetime in UTC, with its time unless it is midnight.

    Monthly and yearly periods start and end at midnight and read as dates; hourly ones need
    the hour.
    """
    if not isinstance(moment, datetime):
        return moment.isoformat()
    moment = moment.astimezone(UTC)
    if moment.time() == datetime.min.time():
        return moment.date().isoformat()
    return moment.strftime("%Y-%m-%d %H:%M UTC")
