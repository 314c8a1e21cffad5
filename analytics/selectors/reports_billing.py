"""Reports read from billing's documents: revenue by product and month, accounts receivable
aging (staff), and a customer's spend by month or by server.

An invoice counts once it is finalized (its month is the month it was finalized in) unless it
was voided: a void invoice was never owed. Amounts are what the documents say, tax included
(``tax`` says how much of ``billed`` is tax: net revenue is ``billed - tax``). The staff's
reports leave out accounts on a billing test clock (demo and test accounts, whose documents are
numbered ``TEST-``); a customer's own report shows all of their invoices.
"""

from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db.models import (
    BigIntegerField,
    Case,
    Count,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce, TruncMonth
from django.utils.translation import gettext_noop

from analytics.reporting import (
    Column,
    Report,
    midnight,
    month_after,
    month_label,
    month_start,
    months,
)
from billing.models import CreditNote, Invoice, InvoiceStatus, PaymentStatus
from billing.selectors import (
    credit_notes_all,
    invoices_all,
    invoices_of_account,
    payments_all,
    products_all,
)
from hosting.money import allocate

# Staff's figures are the business's: accounts on a billing test clock are demos and tests.
REAL_CLOCK = Q(account__billing_clock__isnull=True)
NOT_ISSUED = (InvoiceStatus.DRAFT, InvoiceStatus.VOID)
# Money that reached us for an invoice; a refunded payment was received all the same (giving it
# back is its credit note's, in ``credited``).
RECEIVED = (PaymentStatus.SUCCEEDED, PaymentStatus.REFUNDED)
CREDIT_GATEWAY = "credit"  # the account's credit paying an invoice: no money received
# What a line charges: its amount less its discount, plus its tax unless prices include it.
# An invoice's lines add up to its total (billing.services.invoices).
LINE_CHARGED = (
    F("lines__amount")
    - F("lines__discount_amount")
    + Case(
        When(tax_inclusive=True, then=Value(0)),
        default=F("lines__tax_amount"),
        output_field=BigIntegerField(),
    )
)
OTHER = None  # the product of lines without one (manual lines)

REVENUE_FIGURES = (
    Column("billed", "money", gettext_noop("Billed (tax included)")),
    Column("tax", "money", gettext_noop("Of which tax")),
    Column("credited", "money", gettext_noop("Credited")),
    Column("collected", "money", gettext_noop("Collected")),
    Column("credit_applied", "money", gettext_noop("Paid with account credit")),
)
REVENUE_COLUMNS = {
    "product": (
        Column("month", "month", gettext_noop("Month")),
        Column("currency", "string", gettext_noop("Currency")),
        Column("product_id", "string", gettext_noop("Product")),
        Column("product_name", "string", gettext_noop("Product name")),
        *REVENUE_FIGURES,
    ),
    "month": (
        Column("month", "month", gettext_noop("Month")),
        Column("currency", "string", gettext_noop("Currency")),
        *REVENUE_FIGURES,
    ),
}
BUCKETS = ("days_0_30", "days_31_60", "days_61_90", "days_over_90")
# En dashes between the days, written as such (not \u2013: gettext's extractor would keep the
# escape as six characters, and the catalogue would never match the label).
BUCKET_LABELS = (
    gettext_noop("0–30 days"),  # noqa: RUF001
    gettext_noop("31–60 days"),  # noqa: RUF001
    gettext_noop("61–90 days"),  # noqa: RUF001
    gettext_noop("Over 90 days"),
)
AGING_COLUMNS = {
    "bucket": (
        Column("currency", "string", gettext_noop("Currency")),
        Column("bucket", "string", gettext_noop("Days past due")),
        Column("invoices", "count", gettext_noop("Invoices")),
        Column("amount", "money", gettext_noop("Amount due")),
    ),
    "account": (
        Column("account_id", "string", gettext_noop("Account")),
        Column("account_name", "string", gettext_noop("Account name")),
        Column("currency", "string", gettext_noop("Currency")),
        Column("invoices", "count", gettext_noop("Invoices")),
        *(
            Column(bucket, "money", label)
            for bucket, label in zip(BUCKETS, BUCKET_LABELS, strict=True)
        ),
        Column("total", "money", gettext_noop("Total due")),
    ),
}
SPEND_FIGURES = (
    Column("invoices", "count", gettext_noop("Invoices")),
    Column("billed", "money", gettext_noop("Billed (tax included)")),
    Column("paid", "money", gettext_noop("Paid")),
    Column("credited", "money", gettext_noop("Credited")),
    Column("outstanding", "money", gettext_noop("Still due")),
)
SPEND_COLUMNS = {
    "month": (
        Column("month", "month", gettext_noop("Month")),
        Column("currency", "string", gettext_noop("Currency")),
        *SPEND_FIGURES,
    ),
    "server": (
        Column("kind", "string", gettext_noop("Server, bot or other")),
        Column("instance_id", "string", gettext_noop("Server or bot")),
        Column("name", "string", gettext_noop("Name")),
        Column("currency", "string", gettext_noop("Currency")),
        *SPEND_FIGURES,
    ),
}


def _range(first: date, last: date) -> tuple[datetime, datetime]:
    return midnight(first), midnight(month_after(last))


def _issued(invoices: QuerySet[Invoice], first: date, last: date) -> QuerySet[Invoice]:
    """``invoices`` finalized in the months ``[first, last]`` and not void, without lines."""
    start, end = _range(first, last)
    return (
        invoices.prefetch_related(None)
        .order_by()
        .filter(finalized_at__gte=start, finalized_at__lt=end)
        .exclude(status__in=NOT_ISSUED)
    )


def _month_range(first: date, last: date, **extra: Any) -> dict[str, Any]:
    return {"start_month": month_label(first), "end_month": month_label(last), **extra}


# --- Revenue ----------------------------------------------------------------------------------


def _split(amount: int, weights: list[tuple[str | None, int]]) -> list[tuple[str | None, int]]:
    """``amount`` spread over an invoice's products in proportion to what their lines
    charged (largest remainder, so the parts add up); all to ``OTHER`` if they net to 0."""
    if not weights or sum(weight for _, weight in weights) == 0:
        return [(OTHER, amount)]
    parts = allocate(amount, [weight for _, weight in weights])
    return [(product, part) for (product, _), part in zip(weights, parts, strict=True)]


def revenue_report(
    *, first: date, last: date, currency: str | None = None, group_by: str = "product"
) -> Report:
    """Per month, currency and product (or per month and currency): ``billed``, what the
    invoices finalized that month charged (tax included; ``tax`` the part of it that is tax);
    ``credited``, the credit notes issued that month; ``collected``, the money received that
    month (cards, bank transfers); ``credit_applied``, the account credit that paid invoices
    that month. Credit notes and payments are spread over the products of their invoice in
    proportion to what its lines charged; lines without a product (manual ones) are under
    ``product_id`` null."""
    start, end = _range(first, last)
    invoices = invoices_all().filter(REAL_CLOCK)
    payments = payments_all().filter(
        REAL_CLOCK, status__in=RECEIVED, succeeded_at__gte=start, succeeded_at__lt=end
    )
    credit_notes = credit_notes_all().filter(REAL_CLOCK, created_at__gte=start, created_at__lt=end)
    if currency:
        invoices = invoices.filter(currency=currency)
        payments = payments.filter(currency=currency)
        credit_notes = credit_notes.filter(currency=currency)
    figures: dict[tuple[date, str, str | None], dict[str, int]] = defaultdict(_zeros)
    billed = (
        _issued(invoices, first, last)
        .annotate(month=TruncMonth("finalized_at", tzinfo=UTC))
        .values("month", "currency", product=F("lines__price__product_id"))
        .annotate(billed=Sum(LINE_CHARGED), tax=Sum("lines__tax_amount"))
    )
    for row in billed:
        figure = figures[(month_start(row["month"]), row["currency"], row["product"])]
        figure["billed"] += row["billed"]
        figure["tax"] += row["tax"]

    weights: dict[str, list[tuple[str | None, int]]] = defaultdict(list)
    charged = (
        invoices.prefetch_related(None)
        .order_by()
        .filter(
            Q(pk__in=payments.order_by().values("invoice_id"))
            | Q(pk__in=credit_notes.order_by().values("invoice_id"))
        )
        .values("id", product=F("lines__price__product_id"))
        .annotate(charged=Sum(LINE_CHARGED))
    )
    for row in sorted(charged, key=lambda row: (row["id"], row["product"] or "")):
        weights[row["id"]].append((row["product"], row["charged"]))
    received = payments.values_list("invoice_id", "currency", "gateway", "amount", "succeeded_at")
    for invoice_id, cur, gateway, amount, at in received:
        column = "credit_applied" if gateway == CREDIT_GATEWAY else "collected"
        for product, part in _split(amount, weights[invoice_id]):
            figures[(month_start(at), cur, product)][column] += part
    credited = credit_notes.values_list("invoice_id", "currency", "amount", "created_at")
    for invoice_id, cur, amount, at in credited:
        for product, part in _split(amount, weights[invoice_id]):
            figures[(month_start(at), cur, product)]["credited"] += part

    parameters = _month_range(first, last, group_by=group_by, currency=currency)
    if group_by == "month":
        totals: dict[tuple[date, str], dict[str, int]] = defaultdict(_zeros)
        for (month, cur, _), figure in figures.items():
            for name, amount in figure.items():
                totals[(month, cur)][name] += amount
        rows = [
            {"month": month_label(month), "currency": cur} | totals.get((month, cur), _zeros())
            for month in months(first, last)
            for cur in sorted({cur for _, cur in totals})
        ]
        return Report("revenue", parameters, REVENUE_COLUMNS["month"], rows)
    named = {product for _, _, product in figures if product is not OTHER}
    names = dict(
        products_all().prefetch_related(None).filter(pk__in=named).values_list("id", "name")
    )
    rows = [
        {
            "month": month_label(month),
            "currency": cur,
            "product_id": product,
            "product_name": names.get(product, "Other"),
        }
        | figure
        for (month, cur, product), figure in figures.items()
        if any(figure.values())  # a free line's share of a payment: nothing to show
    ]
    rows.sort(
        key=lambda row: (
            row["month"],
            row["currency"],
            row["product_id"] is None,
            row["product_name"],
            row["product_id"] or "",
        )
    )
    return Report("revenue", parameters, REVENUE_COLUMNS["product"], rows)


def _zeros() -> dict[str, int]:
    return {column.name: 0 for column in REVENUE_FIGURES}


# --- Accounts receivable aging ----------------------------------------------------------------


def _bucket(days_past_due: int) -> str:
    """Not yet due or up to 30 days late: the first bucket (as most aging reports put it)."""
    if days_past_due <= 30:
        return BUCKETS[0]
    if days_past_due <= 60:
        return BUCKETS[1]
    return BUCKETS[2] if days_past_due <= 90 else BUCKETS[3]


def _open_at(cutoff: datetime, currency: str | None) -> list[dict[str, Any]]:
    """The invoices that were owed something just before ``cutoff``: finalized before it, not
    yet paid nor voided then, with what remained owed then (the total less the money received
    and the amounts forgiven by credit notes before it)."""
    received = (
        payments_all()
        .order_by()
        .filter(invoice=OuterRef("pk"), status__in=RECEIVED, succeeded_at__lt=cutoff)
        .values("invoice")
        .annotate(total=Sum("amount"))
        .values("total")
    )
    forgiven = (
        credit_notes_all()
        .order_by()
        .filter(invoice=OuterRef("pk"), refund_to=CreditNote.RefundTo.NONE, created_at__lt=cutoff)
        .values("invoice")
        .annotate(total=Sum("amount"))
        .values("total")
    )
    invoices = (
        invoices_all()
        .prefetch_related(None)
        .order_by()
        .filter(REAL_CLOCK, finalized_at__lt=cutoff)
        .exclude(status=InvoiceStatus.DRAFT)
        .exclude(voided_at__lt=cutoff)
        .exclude(paid_at__lt=cutoff)
    )
    if currency:
        invoices = invoices.filter(currency=currency)
    rows = invoices.values(
        "id", "account_id", "currency", "total", "due_date", account_name=F("account__name")
    ).annotate(
        received=Coalesce(Subquery(received), 0, output_field=BigIntegerField()),
        forgiven=Coalesce(Subquery(forgiven), 0, output_field=BigIntegerField()),
    )
    owed = []
    for row in rows:
        remaining = row["total"] - row["received"] - row["forgiven"]
        if remaining > 0:
            owed.append(row | {"remaining": remaining})
    return owed


def ar_aging_report(
    *, as_of: date, currency: str | None = None, group_by: str = "bucket"
) -> Report:
    """What customers owed at the end of ``as_of`` (UTC), by how many days past its due date
    each invoice then was: 0-30 (not yet due included), 31-60, 61-90 and over 90; open and
    uncollectible invoices alike. Per currency and bucket (every bucket listed for a currency
    that is owed anything), or per account and currency with a column per bucket, largest
    total first."""
    owed = _open_at(midnight(as_of + timedelta(days=1)), currency)
    parameters = {"as_of": f"{as_of:%Y-%m-%d}", "group_by": group_by, "currency": currency}
    if group_by == "account":
        accounts: dict[tuple[str, str], dict[str, Any]] = {}
        for row in owed:
            entry = accounts.setdefault(
                (row["account_id"], row["currency"]),
                {
                    "account_id": row["account_id"],
                    "account_name": row["account_name"],
                    "currency": row["currency"],
                    "invoices": 0,
                }
                | dict.fromkeys(BUCKETS, 0)
                | {"total": 0},
            )
            entry["invoices"] += 1
            entry[_bucket(_days_past_due(row["due_date"], as_of))] += row["remaining"]
            entry["total"] += row["remaining"]
        rows = sorted(
            accounts.values(), key=lambda row: (row["currency"], -row["total"], row["account_id"])
        )
        return Report("ar_aging", parameters, AGING_COLUMNS["account"], rows)
    buckets: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in owed:
        entry = buckets[(row["currency"], _bucket(_days_past_due(row["due_date"], as_of)))]
        entry[0] += 1
        entry[1] += row["remaining"]
    rows = [
        {"currency": cur, "bucket": bucket, "invoices": count, "amount": amount}
        for cur in sorted({cur for cur, _ in buckets})
        for bucket in BUCKETS
        for count, amount in [buckets.get((cur, bucket), [0, 0])]
    ]
    return Report("ar_aging", parameters, AGING_COLUMNS["bucket"], rows)


def _days_past_due(due_date: datetime | None, as_of: date) -> int:
    """Whole days from the due date's UTC day to ``as_of`` (negative: not due yet)."""
    if due_date is None:
        return 0
    return (as_of - due_date.astimezone(UTC).date()).days


# --- A customer's spend -----------------------------------------------------------------------

SPEND_SUMS = {
    "invoices": Count("id"),
    "billed": Sum("total"),
    "paid": Sum("amount_paid"),
    "credited": Sum("amount_credited"),
    "outstanding": Sum("amount_remaining"),
}


def spend_report(*, account_id: str, first: date, last: date, group_by: str = "month") -> Report:
    """What the account's invoices finalized in ``[first, last]`` came to: billed (their
    totals), paid and credited so far, still due. By month (every month of the range, in each
    currency billed) or by the server or bot of each invoice's subscription, most billed first
    (``kind`` ``other``: invoices of no server or bot, e.g. manual ones)."""
    invoices = _issued(invoices_of_account(account_id=account_id), first, last)
    parameters = _month_range(first, last, group_by=group_by)
    if group_by == "server":
        rows = [
            _instance(row) | {name: row[name] for name in SPEND_SUMS}
            for row in invoices.values(
                "currency",
                "subscription__server_id",
                "subscription__server__name",
                "subscription__bot_id",
                "subscription__bot__name",
            ).annotate(**SPEND_SUMS)
        ]
        rows.sort(key=lambda row: (row["currency"], -row["billed"], row["instance_id"] or ""))
        return Report("spend", parameters, SPEND_COLUMNS["server"], rows)
    sums = {
        (month_start(row["month"]), row["currency"]): row
        for row in invoices.annotate(month=TruncMonth("finalized_at", tzinfo=UTC))
        .values("month", "currency")
        .annotate(**SPEND_SUMS)
    }
    rows = [
        {"month": month_label(month), "currency": cur}
        | {name: sums.get((month, cur), {}).get(name, 0) for name in SPEND_SUMS}
        for month in months(first, last)
        for cur in sorted({cur for _, cur in sums})
    ]
    return Report("spend", parameters, SPEND_COLUMNS["month"], rows)


def _instance(row: dict[str, Any]) -> dict[str, Any]:
    if row["subscription__server_id"]:
        kind, prefix = "server", "subscription__server"
    elif row["subscription__bot_id"]:
        kind, prefix = "bot", "subscription__bot"
    else:
        return {"kind": "other", "instance_id": None, "name": None, "currency": row["currency"]}
    return {
        "kind": kind,
        "instance_id": row[f"{prefix}_id"],
        "name": row[f"{prefix}__name"],
        "currency": row["currency"],
    }
