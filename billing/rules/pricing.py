"""What an invoice's lines come to: the coupon's discount and the tax, line by line.

Every invoice the billing engine drafts (an order, a renewal, a plan change) is priced here, so
the rules are written once:

- **Discounts.** A percent coupon takes its percentage of every line (a credit line's discount
  is negative: the customer is credited what they actually paid), each rounded half away from
  zero. An amount coupon takes at most its amount off the invoice's net charges, allocated over
  the positive lines in proportion to them (largest remainder, so the parts add up exactly).
- **Tax** (``billing.rules.tax.tax_for``): the buyer's country from the billing profile (an account
  without one is taxed as a sale in the seller's country), its region, a VAT id (checked again
  here), the exemption staff set, and the active tax rates. The tax is rounded once on the
  invoice's taxable total and allocated to the lines; inclusive rates are inside the amounts.

Pure: the caller reads the profile and the rates (``selectors.tax_decision``), so a batch reads
them once and this module writes nothing.
"""

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, cast

from django.conf import settings

from billing.models import BillingProfile, Coupon
from billing.rules.tax import InvalidVatId, TaxDecision, tax_amounts, tax_for, vat_id_check
from hosting.money import allocate, divide_half_up


@dataclass(frozen=True)
class PricedLines:
    """Lines ready for ``invoice_create``, and the tax decision they were priced with."""

    lines: list[dict[str, Any]]
    tax: TaxDecision

    @property
    def total(self) -> int:
        """What the invoice will total: the lines after discounts, plus exclusive tax."""
        net = sum(
            line["quantity"] * line["unit_amount"] - line["discount_amount"] for line in self.lines
        )
        return net + (0 if self.tax.inclusive else sum(line["tax_amount"] for line in self.lines))


def tax_decision_of(profile: BillingProfile, rates: list[tuple]) -> TaxDecision:
    """The tax of a sale to the owner of ``profile`` given the active ``rates`` (``country``,
    ``region``, ``percentage``, ``inclusive``; other countries' are ignored), without a
    query: for a batch that reads the profiles and rates once."""
    seller_country = cast(str, settings.BILLING_SELLER["country"])  # a code, checked by settings
    country = (profile.country or seller_country).upper()
    vat_valid = False
    if profile.vat_id:
        try:
            vat_id_check(profile.vat_id, country)
            vat_valid = True
        except InvalidVatId:
            vat_valid = False
    return tax_for(
        seller_country=seller_country,
        buyer_country=country,
        buyer_region=profile.region or None,
        buyer_vat_id_valid=vat_valid,
        buyer_tax_exempt=profile.tax_exempt,
        rates=rates,
    )


def _discounts(amounts: list[int], coupon: Coupon | None, currency: str) -> list[int]:
    if coupon is None or not amounts:
        return [0] * len(amounts)
    if coupon.percent_off is not None:
        numerator, denominator = Decimal(coupon.percent_off).as_integer_ratio()
        return [divide_half_up(amount * numerator, 100 * denominator) for amount in amounts]
    if coupon.currency and coupon.currency != currency:
        return [0] * len(amounts)
    net = sum(amounts)
    off = min(coupon.amount_off or 0, max(net, 0))
    charges = [max(amount, 0) for amount in amounts]
    if off == 0 or sum(charges) == 0:
        return [0] * len(amounts)
    return allocate(off, charges)


def price_lines(
    *,
    currency: str,
    lines: list[dict[str, Any]],
    tax: TaxDecision,
    coupon: Coupon | None = None,
) -> PricedLines:
    """``lines`` (``description``, ``quantity``, ``unit_amount`` and the rest ``invoice_create``
    takes) with ``discount_amount`` and ``tax_amount`` filled in, at ``tax`` (the buyer's, from
    ``selectors.tax_decision``, or one decision for a whole batch)."""
    amounts = [line.get("quantity", 1) * line["unit_amount"] for line in lines]
    discounts = _discounts(amounts, coupon, currency)
    taxable = [amount - discount for amount, discount in zip(amounts, discounts, strict=True)]
    taxes = (
        tax_amounts(taxable, tax.percentage, tax.inclusive).lines
        if tax.percentage and any(taxable)
        else [0] * len(lines)
    )
    priced = [
        {
            **line,
            "quantity": line.get("quantity", 1),
            "discount_amount": discount,
            "tax_amount": tax_part,
        }
        for line, discount, tax_part in zip(lines, discounts, taxes, strict=True)
    ]
    return PricedLines(priced, tax)
