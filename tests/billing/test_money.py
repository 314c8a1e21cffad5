"""Money in integer minor units: currencies, formatting, rounding and allocation."""

from fractions import Fraction
from math import floor

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from hosting.money import (
    SUPPORTED_CURRENCIES,
    UnsupportedCurrency,
    allocate,
    divide_half_even,
    divide_half_up,
    format_amount,
    minor_units,
    validate_currency,
)

amounts = st.integers(min_value=-(10**15), max_value=10**15)
weight_lists = st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=30).filter(
    lambda weights: sum(weights) > 0
)
mixed_weight_lists = st.lists(
    st.integers(min_value=-(10**9), max_value=10**9), min_size=1, max_size=30
).filter(lambda weights: sum(weights) != 0)


def test_it_supports_the_currencies_we_bill_in():
    assert {
        "EUR",
        "USD",
        "GBP",
        "CHF",
        "SEK",
        "NOK",
        "DKK",
        "PLN",
        "CZK",
        "CAD",
        "AUD",
        "JPY",
        "BRL",
    } <= SUPPORTED_CURRENCIES


@pytest.mark.parametrize(("currency", "exponent"), [("EUR", 2), ("USD", 2), ("JPY", 0)])
def test_it_knows_each_currencys_minor_unit(currency, exponent):
    assert minor_units(currency) == exponent


def test_it_normalises_the_case_of_a_currency_code():
    assert validate_currency("eur") == "EUR"
    assert minor_units("jpy") == 0


@pytest.mark.parametrize("code", ["XYZ", "", "EURO", " EUR", "EU", None, 978])
def test_it_rejects_a_currency_it_does_not_bill_in(code):
    with pytest.raises(UnsupportedCurrency, match="Currency must be one of AUD, BRL"):
        validate_currency(code)


def test_an_unsupported_currency_is_a_value_error_with_a_code():
    with pytest.raises(ValueError) as raised:
        minor_units("XTS")
    assert raised.value.code == "unsupported_currency"


@pytest.mark.parametrize(
    ("amount", "currency", "text"),
    [
        (1250, "EUR", "12.50 EUR"),
        (5, "EUR", "0.05 EUR"),
        (0, "USD", "0.00 USD"),
        (-5, "GBP", "-0.05 GBP"),
        (123456789, "eur", "1,234,567.89 EUR"),
        (1500, "JPY", "1,500 JPY"),
        (-1500, "JPY", "-1,500 JPY"),
    ],
)
def test_it_formats_amounts_with_the_code_after_the_number(amount, currency, text):
    assert format_amount(amount, currency) == text


@given(amount=amounts, currency=st.sampled_from(sorted(SUPPORTED_CURRENCIES)))
def test_a_formatted_amount_reads_back_as_the_same_minor_units(amount, currency):
    number, code = format_amount(amount, currency).split(" ")
    assert code == currency
    digits = number.replace(",", "").replace(".", "")
    assert int(digits) == amount
    assert ("." in number) == (minor_units(currency) > 0)


@pytest.mark.parametrize(
    ("numerator", "denominator", "half_even", "half_up"),
    [
        (5, 2, 2, 3),
        (7, 2, 4, 4),
        (-5, 2, -2, -3),
        (-7, 2, -4, -4),
        (1, 3, 0, 0),
        (2, 3, 1, 1),
        (-2, 3, -1, -1),
        (0, 7, 0, 0),
    ],
)
def test_it_rounds_quotients_by_each_rule(numerator, denominator, half_even, half_up):
    assert divide_half_even(numerator, denominator) == half_even
    assert divide_half_up(numerator, denominator) == half_up


@pytest.mark.parametrize("divide", [divide_half_even, divide_half_up])
def test_it_refuses_a_denominator_that_is_not_positive(divide):
    with pytest.raises(ValueError, match="positive"):
        divide(1, 0)
    with pytest.raises(ValueError, match="positive"):
        divide(1, -2)


@given(numerator=amounts, denominator=st.integers(min_value=1, max_value=10**12))
def test_half_even_matches_exact_rounding(numerator, denominator):
    # round() of a Fraction rounds half to even, exactly.
    assert divide_half_even(numerator, denominator) == round(Fraction(numerator, denominator))


@given(numerator=amounts, denominator=st.integers(min_value=1, max_value=10**12))
def test_half_up_matches_exact_rounding_away_from_zero(numerator, denominator):
    exact = Fraction(numerator, denominator)
    expected = floor(abs(exact) + Fraction(1, 2)) * (1 if exact >= 0 else -1)
    assert divide_half_up(numerator, denominator) == expected


@given(numerator=amounts, denominator=st.integers(min_value=1, max_value=10**12))
def test_both_rules_are_symmetric_around_zero(numerator, denominator):
    assert divide_half_even(-numerator, denominator) == -divide_half_even(numerator, denominator)
    assert divide_half_up(-numerator, denominator) == -divide_half_up(numerator, denominator)


@pytest.mark.parametrize(
    ("total", "weights", "parts"),
    [
        (10, [1, 1, 1], [4, 3, 3]),
        (-10, [1, 1, 1], [-4, -3, -3]),
        (100, [1, 0, 1], [50, 0, 50]),
        (101, [1, 0, 1], [51, 0, 50]),
        (5, [3, 1], [4, 1]),
        (1000, [70, 20, 10], [700, 200, 100]),
        (7, [2, 3, 5], [1, 2, 4]),
        (0, [1, 2], [0, 0]),
        (0, [5, -5], [0, 0]),
        (100, [-500, 1000], [-100, 200]),
        (100, [-1, -1], [50, 50]),
    ],
)
def test_it_allocates_by_largest_remainder(total, weights, parts):
    assert allocate(total, weights) == parts


def test_it_refuses_to_allocate_over_no_weights():
    with pytest.raises(ValueError, match="no weights"):
        allocate(10, [])


def test_it_refuses_to_allocate_a_total_over_weights_summing_to_zero():
    with pytest.raises(ValueError, match="sum to zero"):
        allocate(10, [5, -5])


@given(total=amounts, weights=mixed_weight_lists)
def test_allocated_parts_always_add_up_to_the_total(total, weights):
    parts = allocate(total, weights)
    assert len(parts) == len(weights)
    assert sum(parts) == total


@given(total=amounts, weights=mixed_weight_lists)
def test_each_part_is_less_than_one_unit_from_its_exact_share(total, weights):
    for part, weight in zip(allocate(total, weights), weights, strict=True):
        assert abs(part - Fraction(total * weight, sum(weights))) < 1


@given(total=amounts, weights=mixed_weight_lists)
def test_a_zero_weight_gets_nothing(total, weights):
    for part, weight in zip(allocate(total, weights), weights, strict=True):
        if weight == 0:
            assert part == 0


@given(total=amounts, weights=weight_lists)
def test_a_negative_total_is_the_mirror_of_the_positive_one(total, weights):
    assert allocate(-total, weights) == [-part for part in allocate(total, weights)]


@given(total=amounts, weights=weight_lists, factor=st.integers(min_value=1, max_value=1000))
def test_scaling_the_weights_changes_nothing(total, weights, factor):
    assert allocate(total, [weight * factor for weight in weights]) == allocate(total, weights)


@given(
    total=amounts,
    weight=st.integers(min_value=1, max_value=10**6),
    count=st.integers(min_value=1, max_value=50),
)
def test_equal_weights_get_parts_at_most_one_unit_apart(total, weight, count):
    parts = allocate(total, [weight] * count)
    assert max(parts) - min(parts) <= 1


@given(total=st.integers(min_value=0, max_value=10**12), weights=weight_lists)
def test_a_non_negative_total_over_non_negative_weights_gives_non_negative_parts(total, weights):
    assume(total >= 0)
    assert all(part >= 0 for part in allocate(total, weights))


def test_admin_shows_amounts_in_major_units_never_minor_ones():
    """Staff read 10.70 EUR, not 1070 EUR (the order journey found this in admin)."""
    from billing.models import BalanceTransaction, Payment, Price, Product

    price = Price(product=Product(name="4 GB"), unit_amount=899, currency="EUR", interval="month")
    assert str(price) == "4 GB: 8.99 EUR / month"
    payment = Payment(id="pay_1", amount=1070, currency="EUR", status="succeeded")
    assert str(payment) == "pay_1 10.70 EUR (succeeded)"
    assert str(BalanceTransaction(amount=-500, currency="EUR", kind="adjustment")) == (
        "-5.00 EUR (adjustment)"
    )
    assert str(BalanceTransaction(amount=1500, currency="JPY", kind="adjustment")) == (
        "+1,500 JPY (adjustment)"
    )
