"""Money as integers: minor units of an ISO 4217 currency (CONTRACT §1, §10).

No float ever holds an amount. Every division of money goes through the two rounding helpers
below, so each rule is written once:

- ``divide_half_even`` rounds a quotient to the nearest integer, ties to the even one (proration).
- ``divide_half_up`` rounds ties away from zero, "commercial rounding" (tax amounts).
- ``allocate`` splits an amount by weights with the largest-remainder method: the parts always
  add up to the amount exactly.

Both helpers are symmetric around zero (``f(-n, d) == -f(n, d)``), so a credit note rounds
exactly like the invoice it mirrors. This module is pure (only ``format_amount`` reads the
active language): it raises ``ValueError`` subclasses and
the services turn them into application errors.
"""

import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from types import MappingProxyType

from django.utils.formats import number_format
from django.utils.translation import get_language


class UnsupportedCurrency(ValueError):
    """The code is not an ISO 4217 currency this service bills in."""

    code = "unsupported_currency"


# Digits after the decimal point of each supported currency: the "minor unit" column of the
# ISO 4217 list (https://www.six-group.com/en/products-services/financial-information/data-standards.html).
# A short explicit table instead of a locale library: babel is not a dependency, and these
# exponents have not changed in decades. A currency is supported once it is listed here.
_EXPONENTS: Mapping[str, int] = MappingProxyType(
    {
        "AUD": 2,
        "BRL": 2,
        "CAD": 2,
        "CHF": 2,
        "CZK": 2,
        "DKK": 2,
        "EUR": 2,
        "GBP": 2,
        "JPY": 0,
        "NOK": 2,
        "PLN": 2,
        "SEK": 2,
        "USD": 2,
    }
)

SUPPORTED_CURRENCIES: frozenset[str] = frozenset(_EXPONENTS)


def validate_currency(code: str) -> str:
    """The upper-case ISO 4217 code for ``code`` (``"eur"`` → ``"EUR"``), or
    ``UnsupportedCurrency`` when it is not one we bill in."""
    normalised = code.upper() if isinstance(code, str) else None
    if normalised not in _EXPONENTS:
        supported = ", ".join(sorted(_EXPONENTS))
        raise UnsupportedCurrency(f"Currency must be one of {supported}.")
    return normalised


def minor_units(currency: str) -> int:
    """Digits after the decimal point in ``currency``: 2 for EUR (cents), 0 for JPY."""
    return _EXPONENTS[validate_currency(currency)]


def format_amount(amount: int, currency: str) -> str:
    """``amount`` minor units written for invoices and e-mails: ``"1,234.50 EUR"``, ``"-5.00 USD"``,
    ``"1,500 JPY"``.

    The code follows the number rather than a symbol in front of it: "$" is shared by USD, CAD
    and AUD and "kr" by SEK, NOK and DKK, and an invoice must not leave the currency in doubt.
    In English, digits are grouped by "," with "." before the minor units; in another active
    language (a German page: ``"1.234,50 EUR"``) by that locale's separators. The API and the
    worker always run in English (hosting/i18n.py), so what programs read never changes.
    """
    currency = validate_currency(currency)
    exponent = _EXPONENTS[currency]
    major, minor = divmod(abs(amount), 10**exponent)
    sign = "-" if amount < 0 else ""
    language = get_language() or "en"
    if language.split("-")[0] != "en":
        number = number_format(
            Decimal(abs(amount)).scaleb(-exponent),
            decimal_pos=exponent,
            use_l10n=True,
            force_grouping=True,
        )
        return f"{sign}{number}\N{NO-BREAK SPACE}{currency}"
    number = f"{major:,}" + (f".{minor:0{exponent}d}" if exponent else "")
    return f"{sign}{number} {currency}"


class InvalidAmount(ValueError):
    """Text that is not an amount of the currency (a person typed it into a form)."""


_AMOUNT_TEXT = re.compile(r"^([+-]?)(\d+)(?:\.(\d+))?$")


def parse_amount(text: str, currency: str, *, allow_negative: bool = False) -> int:
    """Minor units of ``text`` written in the currency's units, as people type money:
    ``"5"`` and ``"5.00"`` are 500 in EUR, ``"1500"`` is 1500 in JPY. ``InvalidAmount`` says
    why otherwise: not a number, more decimals than the currency has, or below zero when
    ``allow_negative`` is false. Spaces and "," between thousands are ignored
    (``"1,234.50"``); a decimal comma is refused rather than guessed."""
    currency = validate_currency(currency)
    exponent = _EXPONENTS[currency]
    cleaned = (text or "").strip().replace(" ", "")
    if re.fullmatch(r"[+-]?\d{1,3}(,\d{3})+(\.\d+)?", cleaned):
        cleaned = cleaned.replace(",", "")
    match = _AMOUNT_TEXT.match(cleaned)
    example = "5" if exponent == 0 else "5." + "0" * exponent
    if match is None:
        raise InvalidAmount(f"Not an amount: write it in {currency} like {example}.")
    sign, major, minor = match.groups()
    minor = (minor or "").rstrip("0")
    if len(minor) > exponent:
        if exponent == 0:
            raise InvalidAmount(f"{currency} has no decimals: write it like {example}.")
        raise InvalidAmount(f"{currency} has {exponent} decimals at most: write it like {example}.")
    amount = int(major) * 10**exponent + int(minor.ljust(exponent, "0") or 0)
    if sign == "-":
        amount = -amount
    if amount < 0 and not allow_negative:
        raise InvalidAmount("The amount cannot be negative.")
    return amount


def amount_text(amount: int, currency: str) -> str:
    """Minor units as a form shows them back for editing, no grouping or code: ``"8.99"``."""
    exponent = _EXPONENTS[validate_currency(currency)]
    major, minor = divmod(abs(amount), 10**exponent)
    sign = "-" if amount < 0 else ""
    return f"{sign}{major}" + (f".{minor:0{exponent}d}" if exponent else "")


def divide_half_even(numerator: int, denominator: int) -> int:
    """``numerator / denominator`` rounded to the nearest integer, ties to the even integer.

    Exact integer arithmetic: no float or Decimal context is involved.
    """
    quotient, remainder = _divmod_positive(numerator, denominator)
    twice = 2 * remainder
    if twice > denominator or (twice == denominator and quotient % 2 == 1):
        quotient += 1
    return quotient


def divide_half_up(numerator: int, denominator: int) -> int:
    """``numerator / denominator`` rounded to the nearest integer, ties away from zero
    (``2.5 → 3``, ``-2.5 → -3``)."""
    if numerator < 0:
        return -divide_half_up(-numerator, denominator)
    quotient, remainder = _divmod_positive(numerator, denominator)
    return quotient + (1 if 2 * remainder >= denominator else 0)


def _divmod_positive(numerator: int, denominator: int) -> tuple[int, int]:
    if denominator <= 0:
        raise ValueError("The denominator must be positive.")
    return divmod(numerator, denominator)


def allocate(total: int, weights: Sequence[int]) -> list[int]:
    """``total`` split in proportion to ``weights``: the parts always add up to ``total``.

    Largest-remainder method: each part starts at the floor of its exact share
    ``total * weight / sum(weights)``, and the units left over go one each to the parts with the
    largest fractional remainders, the earlier part first on a tie. Every part is therefore less
    than one unit away from its exact share. Weights may be negative (an invoice's credit lines)
    as long as they do not sum to zero; then only a zero total can be split (into zeros). A
    negative total is split as the mirror image of the positive one.
    """
    if not weights:
        raise ValueError("Cannot allocate over no weights.")
    weight_sum = sum(weights)
    if weight_sum == 0:
        if total == 0:
            return [0] * len(weights)
        raise ValueError("Cannot allocate a non-zero total over weights that sum to zero.")
    if weight_sum < 0:
        weights, weight_sum = [-weight for weight in weights], -weight_sum
    if total < 0:
        return [-part for part in allocate(-total, weights)]

    parts = []
    remainders = []
    for index, weight in enumerate(weights):
        part, remainder = divmod(total * weight, weight_sum)
        parts.append(part)
        remainders.append((-remainder, index))
    # The floors fall short of total by fewer units than there are parts, so each part gains
    # at most one.
    for _, index in sorted(remainders)[: total - sum(parts)]:
        parts[index] += 1
    return parts
