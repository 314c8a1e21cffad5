"""Tax: offline VAT id checks, which rate applies, and amounts that add up exactly."""

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billing.rules.tax import (
    EU_MEMBER_STATES,
    REVERSE_CHARGE_NOTE,
    TAX_EXEMPT_NOTE,
    InvalidTaxRate,
    InvalidVatId,
    TaxDecision,
    TaxRateRow,
    subdivision_code,
    tax_amounts,
    tax_for,
    validate_percentage,
    vat_id_check,
    vat_prefix,
)

RATES = [
    TaxRateRow("DE", None, Decimal("19"), False),
    TaxRateRow("FR", None, Decimal("20"), False),
    TaxRateRow("CH", None, Decimal("8.1"), True),
    TaxRateRow("GB", None, Decimal("20"), False),
    TaxRateRow("US", "US-NY", Decimal("8.875"), False),
    TaxRateRow("ES", None, Decimal("21"), False),
    TaxRateRow("ES", "ES-CN", Decimal("0"), False),  # the Canary Islands charge IGIC, not VAT
]

percentages = st.decimals(
    min_value=0, max_value=100, places=4, allow_nan=False, allow_infinity=False
)
line_lists = st.lists(st.integers(min_value=-(10**9), max_value=10**9), min_size=1, max_size=20)
positive_line_lists = st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=20)


def test_it_lists_the_27_member_states_with_greeces_vat_prefix():
    assert len(EU_MEMBER_STATES) == 27
    assert {"DE", "FR", "GR", "IE", "HR"} <= EU_MEMBER_STATES
    assert "GB" not in EU_MEMBER_STATES and "EL" not in EU_MEMBER_STATES
    assert vat_prefix("GR") == "EL"
    assert vat_prefix("de") == "DE"


@pytest.mark.parametrize(
    ("vat_id", "country", "normalised"),
    [
        ("DE136695976", "DE", "DE136695976"),
        ("de 136.695.976", "DE", "DE136695976"),
        ("136695976", "DE", "DE136695976"),
        ("ATU13585627", "AT", "ATU13585627"),
        ("U13585627", "AT", "ATU13585627"),
        ("ESB58378431", "ES", "ESB58378431"),
        ("B-58378431", "ES", "ESB58378431"),
        ("EL094259216", "GR", "EL094259216"),
        ("GR094259216", "GR", "EL094259216"),
        ("094259216", "gr", "EL094259216"),
        ("FR 40 303 265 045", "FR", "FR40303265045"),
        ("NL004495445B01", "NL", "NL004495445B01"),
        ("IE6388047V", "IE", "IE6388047V"),
        ("GB 980 7806 84", "GB", "980780684"),
        ("CHE-116.281.710 MWST", "CH", "CHE116281710MWST"),
    ],
)
def test_it_normalises_a_valid_vat_id(vat_id, country, normalised):
    assert vat_id_check(vat_id, country) == normalised


@pytest.mark.parametrize(
    ("vat_id", "country", "code"),
    [
        ("FR40303265045", "DE", "country_mismatch"),
        ("EL094259216", "CY", "country_mismatch"),
        ("DE136695978", "DE", "invalid_checksum"),
        ("DE13669597", "DE", "invalid_length"),
        ("", "DE", "invalid_format"),
        ("DE13669597X", "DE", "invalid_format"),
        ("12-3456789", "US", "unsupported_country"),
        ("123", "E1", "unsupported_country"),
    ],
)
def test_it_refuses_an_invalid_vat_id_with_a_code(vat_id, country, code):
    with pytest.raises(InvalidVatId) as raised:
        vat_id_check(vat_id, country)
    assert raised.value.code == code
    assert isinstance(raised.value, ValueError)


def decide(**overrides) -> TaxDecision:
    arguments = {
        "seller_country": "DE",
        "buyer_country": "FR",
        "buyer_vat_id_valid": False,
        "buyer_tax_exempt": False,
        "rates": RATES,
    } | overrides
    return tax_for(**arguments)


def test_eu_b2b_across_borders_is_reverse_charged():
    decision = decide(buyer_vat_id_valid=True)
    assert decision == TaxDecision(Decimal(0), reverse_charge=True, note=REVERSE_CHARGE_NOTE)
    assert "Article 196 of Directive 2006/112/EC" in decision.note


def test_a_seller_outside_the_eu_reverse_charges_an_eu_business_too():
    assert decide(seller_country="CH", buyer_vat_id_valid=True).reverse_charge


def test_a_domestic_business_pays_its_countrys_vat():
    assert decide(buyer_country="DE", buyer_vat_id_valid=True) == TaxDecision(Decimal("19"))


def test_a_consumer_pays_the_vat_of_their_country():
    assert decide() == TaxDecision(Decimal("20"))


def test_a_business_outside_the_eu_is_not_reverse_charged():
    assert decide(buyer_country="GB", buyer_vat_id_valid=True) == TaxDecision(Decimal("20"))


def test_a_tax_exempt_buyer_pays_none_with_a_note():
    assert decide(buyer_tax_exempt=True) == TaxDecision(Decimal(0), note=TAX_EXEMPT_NOTE)


def test_the_reverse_charge_note_wins_over_the_exemption():
    assert decide(buyer_vat_id_valid=True, buyer_tax_exempt=True).reverse_charge


def test_an_inclusive_rate_says_so():
    assert decide(buyer_country="CH") == TaxDecision(Decimal("8.1"), inclusive=True)


def test_a_regional_rate_beats_the_country_wide_one():
    assert decide(buyer_country="ES", buyer_region="es-cn") == TaxDecision(Decimal("0"))
    assert decide(buyer_country="ES", buyer_region="ES-MD") == TaxDecision(Decimal("21"))
    assert decide(buyer_country="ES") == TaxDecision(Decimal("21"))


def test_a_regional_rate_applies_only_in_its_region():
    assert decide(buyer_country="US", buyer_region="US-NY") == TaxDecision(Decimal("8.875"))
    assert decide(buyer_country="US", buyer_region="US-CA") == TaxDecision(Decimal(0))
    assert decide(buyer_country="US") == TaxDecision(Decimal(0))


@pytest.mark.parametrize("region", ["US-NY", "us-ny", "NY", "ny", " Ny "])
def test_a_region_is_matched_as_its_subdivision_code_with_or_without_the_country(region):
    assert decide(buyer_country="US", buyer_region=region) == TaxDecision(Decimal("8.875"))


@pytest.mark.parametrize("region", ["Canarias", "FR-CN", "C.N.", "ES-CNXX"])
def test_a_region_that_is_no_subdivision_code_of_the_country_gets_the_country_rate(region):
    assert decide(buyer_country="ES", buyer_region=region) == TaxDecision(Decimal("21"))


@pytest.mark.parametrize(
    ("region", "country", "code"),
    [
        ("ny", "US", "US-NY"),
        ("US-NY", "us", "US-NY"),
        (" es-cn ", "ES", "ES-CN"),
        ("bq1", "NL", "NL-BQ1"),
        ("New York", "US", None),
        ("DE-BY", "US", None),
        ("NY", "", None),
        ("", "US", None),
    ],
)
def test_it_reads_a_region_as_an_iso_3166_2_code_by_its_shape(region, country, code):
    assert subdivision_code(region, country) == code


def test_no_configured_rate_means_no_tax():
    assert decide(buyer_country="JP") == TaxDecision(Decimal(0))
    assert decide(rates=[]) == TaxDecision(Decimal(0))


def test_it_reads_rates_as_plain_tuples_and_ignores_case():
    rates = [("fr", None, Decimal("20"), False)]
    assert decide(buyer_country="fr", seller_country="de", rates=rates) == TaxDecision(
        Decimal("20")
    )


def test_it_refuses_two_rates_for_the_same_place():
    rates = [*RATES, ("FR", None, Decimal("5.5"), False)]
    with pytest.raises(InvalidTaxRate, match=r"Two tax rates are configured for FR\."):
        decide(rates=rates)


def test_it_refuses_a_configured_rate_out_of_range():
    with pytest.raises(InvalidTaxRate):
        decide(rates=[("FR", None, Decimal("120"), False)])


@pytest.mark.parametrize("percentage", [Decimal("19"), 19, "19", "8.875", Decimal("0.0001"), 100])
def test_it_accepts_exact_percentages(percentage):
    assert validate_percentage(percentage) == Decimal(str(percentage))


@pytest.mark.parametrize(
    "percentage", [19.0, True, "abc", "NaN", "Infinity", Decimal(-1), Decimal("100.01"), "8.12345"]
)
def test_it_refuses_inexact_or_out_of_range_percentages(percentage):
    with pytest.raises(InvalidTaxRate):
        validate_percentage(percentage)


@pytest.mark.parametrize(
    ("lines", "percentage", "inclusive", "line_taxes", "total"),
    [
        ([1000, 2499, -500], "19", False, [190, 475, -95], 570),
        ([1190], "19", True, [190], 190),
        ([5], "10", False, [1], 1),  # 0.5 rounds up
        ([-5], "10", False, [-1], -1),  # and a credit mirrors it
        ([1, 1, 1], "50", False, [1, 1, 0], 2),  # 1.5 → 2, allocated by largest remainder
        ([1000, -1000], "20", False, [0, 0], 0),
        ([999, 1], "8.875", False, [89, 0], 89),
        ([1000], "0", True, [0], 0),
        ([], "19", False, [], 0),
    ],
)
def test_it_computes_the_tax_of_an_invoice(lines, percentage, inclusive, line_taxes, total):
    assert tax_amounts(lines, Decimal(percentage), inclusive) == (line_taxes, total)


@given(lines=line_lists, percentage=percentages)
def test_exclusive_lines_and_their_taxes_add_up_to_the_invoice_total(lines, percentage):
    line_taxes, tax = tax_amounts(lines, percentage, inclusive=False)
    assert len(line_taxes) == len(lines)
    assert sum(line_taxes) == tax
    invoice_total = sum(line + line_tax for line, line_tax in zip(lines, line_taxes, strict=True))
    assert invoice_total == sum(lines) + tax
    exact = Fraction(sum(lines)) * Fraction(percentage) / 100
    assert abs(tax - exact) <= Fraction(1, 2)


@given(lines=line_lists, percentage=percentages)
def test_inclusive_tax_is_extracted_from_the_gross(lines, percentage):
    line_taxes, tax = tax_amounts(lines, percentage, inclusive=True)
    gross = sum(lines)
    net = gross - tax
    assert sum(line_taxes) == tax
    assert net + tax == gross
    exact = Fraction(gross) * Fraction(percentage) / (100 + Fraction(percentage))
    assert abs(tax - exact) <= Fraction(1, 2)
    # Adding the tax back to the net, to the unit, gives the gross again.
    assert abs(net + net * Fraction(percentage) / 100 - gross) <= 1


@given(lines=positive_line_lists, percentage=percentages, inclusive=st.booleans())
def test_each_lines_tax_is_close_to_its_own_exact_tax(lines, percentage, inclusive):
    line_taxes, _ = tax_amounts(lines, percentage, inclusive)
    rate = Fraction(percentage) / 100
    share = rate / (1 + rate) if inclusive else rate
    for line, line_tax in zip(lines, line_taxes, strict=True):
        assert abs(line_tax - line * share) < Fraction(3, 2)


@given(lines=line_lists, percentage=percentages, inclusive=st.booleans())
def test_a_credit_note_mirrors_its_invoice(lines, percentage, inclusive):
    line_taxes, tax = tax_amounts(lines, percentage, inclusive)
    assert tax_amounts([-line for line in lines], percentage, inclusive) == (
        [-line_tax for line_tax in line_taxes],
        -tax,
    )
