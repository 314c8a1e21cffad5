"""Which tax an invoice carries, and how much.

Deciding (``tax_for``), in this order:

1. Reverse charge: a buyer in an EU member state with a valid-format VAT id, supplied from
   any other country, pays no VAT to us; the buyer accounts for it (Articles 44 and 196 of
   Directive 2006/112/EC, services between businesses) and the invoice says so.
2. A tax-exempt buyer (staff set this on the billing profile) pays none, with a note.
3. Otherwise the buyer country's configured rate, a rate for the buyer's region before a
   country-wide one; no configured rate means no tax. Regions are compared as ISO 3166-2 codes
   (``subdivision_code``: ``ny`` in the US is ``US-NY``); a region that does not read as one
   (``New York``) matches no regional rate, so the country-wide rate applies.

Computing (``tax_amounts``): the tax is rounded once, on the invoice total, half away from zero
("commercial rounding", what tax authorities and accountants expect), and then spread over the
lines with ``money.allocate``, so the lines' taxes add up to the invoice's tax exactly:

- exclusive rates: ``tax = round(net * p / 100)``, and the invoice total is ``net + tax``;
- inclusive rates: the line amounts are gross, ``tax = round(gross * p / (100 + p))`` is
  extracted from them, and ``net = gross - tax``.

Percentages are ``Decimal`` (8.1 % in Switzerland, 5.5 % in France, 8.875 % in New York), never
float, and every computation on them is exact integer arithmetic. VAT ids are checked offline
for their format and check digits with python-stdnum; there is no VIES call here.
"""

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import NamedTuple

import pycountry
from django.utils.translation import gettext_noop
from stdnum import exceptions as stdnum_errors
from stdnum.eu import vat as eu_vat
from stdnum.util import clean, get_cc_module

from hosting.money import allocate, divide_half_up

# The 27 member states by ISO 3166-1 alpha-2 code. Their VAT ids start with the same two
# letters, except Greece's, which start with "EL" (VAT_PREFIXES).
EU_MEMBER_STATES: frozenset[str] = frozenset(
    {
        "AT",
        "BE",
        "BG",
        "CY",
        "CZ",
        "DE",
        "DK",
        "EE",
        "ES",
        "FI",
        "FR",
        "GR",
        "HR",
        "HU",
        "IE",
        "IT",
        "LT",
        "LU",
        "LV",
        "MT",
        "NL",
        "PL",
        "PT",
        "RO",
        "SE",
        "SI",
        "SK",
    }
)
VAT_PREFIXES: dict[str, str] = {country: country for country in EU_MEMBER_STATES} | {"GR": "EL"}
_ALL_PREFIXES = frozenset(VAT_PREFIXES.values()) | EU_MEMBER_STATES


# Stored in English on the invoice and translated where shown (the page, the PDF).
REVERSE_CHARGE_NOTE = gettext_noop(
    "Reverse charge: VAT to be accounted for by the recipient "
    "(Article 196 of Directive 2006/112/EC)."
)
TAX_EXEMPT_NOTE = gettext_noop("Tax exempt: no tax charged.")

# An ISO 3166-2 subdivision code by its shape: the country's code, "-" and one to three letters
# or digits (US-NY, ES-CN, NL-BQ1); the country may be left out (NY). Names such as "New York"
# are not recognised.
_COUNTRY_CODE = re.compile(r"[A-Z]{2}")


def is_country(code: str) -> bool:
    """Whether ``code`` (upper case) is an ISO 3166-1 alpha-2 code of a country, as pycountry's
    copy of the standard lists them: ``DE`` yes; ``ZZ``, ``EU`` (no country) and ``UK`` (the
    United Kingdom is ``GB``) no."""
    return bool(_COUNTRY_CODE.fullmatch(code)) and pycountry.countries.get(alpha_2=code) is not None


SUBDIVISION = re.compile(r"(?:(?P<country>[A-Z]{2})-)?(?P<code>[A-Z0-9]{1,3})")

_HUNDRED = Decimal(100)
_MAX_DECIMAL_PLACES = 4  # as Stripe's tax rates; enough for 8.875 %
_SMALLEST_STEP = Decimal(1).scaleb(-_MAX_DECIMAL_PLACES)


class InvalidVatId(ValueError):
    """A VAT id that fails the offline check; ``code`` says why, for the field error.
    ``template`` and ``params`` let the caller say it in the page's language (``str()`` is the
    English)."""

    def __init__(
        self, template: str, *, code: str = "invalid", params: dict[str, str] | None = None
    ):
        self.template, self.params = template, params or {}
        super().__init__(template % self.params if params else template)
        self.code = code


class InvalidTaxRate(ValueError):
    """A tax percentage out of range, or two configured rates for the same place."""

    code = "invalid_tax_rate"


class TaxRateRow(NamedTuple):
    """A configured rate as ``tax_for`` reads it; a plain 4-tuple in this order works too."""

    country: str
    region: str | None
    percentage: Decimal
    inclusive: bool


@dataclass(frozen=True)
class TaxDecision:
    """The tax an invoice carries: its rate, whether prices include it, and the invoice note."""

    percentage: Decimal
    inclusive: bool = False
    reverse_charge: bool = False
    note: str = ""


class TaxAmounts(NamedTuple):
    """The tax of each line (in line order) and the invoice's tax, their exact sum."""

    lines: list[int]
    total: int


def vat_prefix(country: str) -> str:
    """The two letters a member state's VAT ids start with (``"GR"`` → ``"EL"``)."""
    return VAT_PREFIXES[country.upper()]


def vat_id_check(vat_id: str, country: str) -> str:
    """``vat_id`` normalised (``"de 136.695.976"`` → ``"DE136695976"``) after an offline check
    of its format and check digits against ``country`` (ISO 3166-1 alpha-2).

    For a member state the id is returned with its VAT prefix, which may be left out on input
    (``"136695976"`` for ``"DE"``); an id of another member state is refused. For another
    country, the country's own tax-number check from python-stdnum is used (GB, CH, NO, …),
    and its compact form is returned. Raises ``InvalidVatId`` with a ``code``:
    ``country_mismatch``, ``invalid_format``, ``invalid_length``, ``invalid_checksum`` or
    ``unsupported_country``.
    """
    country = country.upper()
    if country in EU_MEMBER_STATES:
        return _eu_vat_id_check(vat_id, country)
    module = get_cc_module(country.lower(), "vat") if country.isalpha() else None
    if module is None:
        raise InvalidVatId(
            gettext_noop("VAT ids cannot be checked for the country '%(country)s'."),
            code="unsupported_country",
            params={"country": country},
        )
    return _stdnum_validate(module.validate, vat_id)


def _eu_vat_id_check(vat_id: str, country: str) -> str:
    prefix = vat_prefix(country)
    compact = clean(vat_id, " -./,").upper()
    if compact.startswith(country) and prefix != country:
        # "GR…" for a Greek id, a common slip for its VAT prefix "EL…".
        compact = prefix + compact.removeprefix(country)
    if compact.startswith(prefix):
        return _stdnum_validate(eu_vat.validate, compact)
    # The national number without its prefix, or the id of another member state. Spanish and
    # Austrian numbers begin with a letter, so try the first reading before the second.
    try:
        return _stdnum_validate(eu_vat.validate, prefix + compact)
    except InvalidVatId:
        if compact[:2] in _ALL_PREFIXES:
            raise InvalidVatId(
                gettext_noop("The VAT id belongs to another country than %(country)s."),
                code="country_mismatch",
                params={"country": country},
            ) from None
        raise


def _stdnum_validate(validate: Callable[[str], str], vat_id: str) -> str:
    try:
        return validate(vat_id)
    except stdnum_errors.InvalidLength:
        raise InvalidVatId(
            gettext_noop("The VAT id has the wrong length."), code="invalid_length"
        ) from None
    except stdnum_errors.InvalidChecksum:
        raise InvalidVatId(
            gettext_noop("The VAT id's check digits are wrong."), code="invalid_checksum"
        ) from None
    except stdnum_errors.ValidationError:
        raise InvalidVatId(
            gettext_noop("The VAT id is not in a valid format."), code="invalid_format"
        ) from None


def subdivision_code(region: str, country: str) -> str | None:
    """``region`` as the ISO 3166-2 code of a subdivision of ``country`` (``"ny"``, ``"US-NY"``
    and ``" us-ny "`` in ``"US"`` → ``"US-NY"``), or ``None`` when it does not read as one:
    free text (``"New York"``), another country's code (``"DE-BY"`` in the US), no country."""
    country = country.strip().upper()
    found = SUBDIVISION.fullmatch(region.strip().upper())
    if (
        not _COUNTRY_CODE.fullmatch(country)
        or found is None
        or found["country"] not in (None, country)
    ):
        return None
    return f"{country}-{found['code']}"


def tax_for(
    *,
    seller_country: str,
    buyer_country: str,
    buyer_region: str | None = None,
    buyer_vat_id_valid: bool,
    buyer_tax_exempt: bool,
    rates: Iterable[TaxRateRow | tuple[str, str | None, Decimal, bool]],
) -> TaxDecision:
    """The tax for a sale from ``seller_country`` to a buyer in ``buyer_country`` (and
    ``buyer_region``, read by ``subdivision_code``, when rates differ by region).

    The rules and their order are the module's. ``rates`` are the configured rates, at most one
    per country and region (``InvalidTaxRate`` otherwise).
    """
    seller_country, buyer_country = seller_country.upper(), buyer_country.upper()
    if buyer_country in EU_MEMBER_STATES and buyer_vat_id_valid and seller_country != buyer_country:
        return TaxDecision(Decimal(0), reverse_charge=True, note=REVERSE_CHARGE_NOTE)
    if buyer_tax_exempt:
        return TaxDecision(Decimal(0), note=TAX_EXEMPT_NOTE)

    region = subdivision_code(buyer_region, buyer_country) if buyer_region else None
    in_country = [
        row for row in map(TaxRateRow._make, rates) if row.country.upper() == buyer_country
    ]
    regional = [row for row in in_country if row.region and row.region.upper() == region]
    nationwide = [row for row in in_country if not row.region]
    for matches in (regional, nationwide):
        if len(matches) > 1:
            place = " ".join(filter(None, (buyer_country, matches[0].region)))
            raise InvalidTaxRate(f"Two tax rates are configured for {place}.")
        if matches:
            return TaxDecision(validate_percentage(matches[0].percentage), matches[0].inclusive)
    return TaxDecision(Decimal(0))


def validate_percentage(percentage: Decimal | int | str) -> Decimal:
    """``percentage`` as a ``Decimal`` from 0 to 100 with at most four decimal places;
    ``InvalidTaxRate`` otherwise (a float is refused: it cannot hold 8.1 exactly)."""
    if isinstance(percentage, float | bool):
        raise InvalidTaxRate("A tax percentage must be a Decimal, an int or a string.")
    try:
        value = Decimal(percentage)
    except ArithmeticError:
        raise InvalidTaxRate("A tax percentage must be a number.") from None
    if not value.is_finite() or not 0 <= value <= _HUNDRED:
        raise InvalidTaxRate("A tax percentage must be between 0 and 100.")
    if value != value.quantize(_SMALLEST_STEP):
        raise InvalidTaxRate(f"A tax percentage has at most {_MAX_DECIMAL_PLACES} decimal places.")
    return value


def tax_amounts(
    line_amounts: Sequence[int], percentage: Decimal | int | str, inclusive: bool
) -> TaxAmounts:
    """The tax on an invoice's lines (minor units; negative for credits and discounts) at
    ``percentage``: each line's share and the total, by the module's rounding rule.

    Exclusive: the invoice total is ``sum(line_amounts) + total``. Inclusive: the amounts are
    gross, and the net is ``sum(line_amounts) - total``.
    """
    rate_numerator, rate_denominator = validate_percentage(percentage).as_integer_ratio()
    base = sum(line_amounts)
    # percentage p = a/b; exclusive: tax = base·p/100 = base·a / (100·b);
    # inclusive: tax = base·p/(100 + p) = base·a / (100·b + a).
    denominator = 100 * rate_denominator + (rate_numerator if inclusive else 0)
    total = divide_half_up(base * rate_numerator, denominator)
    lines = allocate(total, line_amounts) if line_amounts else []
    return TaxAmounts(lines, total)
