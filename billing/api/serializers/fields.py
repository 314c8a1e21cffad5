"""Fields shared by the billing API's bodies: the largest amount, exact decimals, text of a
fixed shape and currency codes.
"""

from rest_framework import serializers

from billing.services.catalogue import MAX_AMOUNT
from hosting.money import SUPPORTED_CURRENCIES

# The largest amount a body may carry (ten billion in a two-decimal currency): far past any real
# adjustment, and small enough that no sum of them leaves the 64-bit columns.
AMOUNT_MAX = 10**12


class ExactDecimalField(serializers.CharField):
    """A decimal as its exact shortest string (``Decimal("12.50")`` is ``"12.5"``)."""

    def to_representation(self, value):
        return format(value.normalize(), "f")


class ShapeField(serializers.RegexField):
    """Text of a fixed shape, checked as sent: the schema's pattern applies to it untrimmed,
    and a final newline, which Python's ``$`` lets through (JSON Schema's does not), is
    refused too."""

    def __init__(self, regex: str, **kwargs):
        super().__init__(regex, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data):
        if isinstance(data, str) and data.endswith("\n"):
            raise serializers.ValidationError(
                "This value does not match the required pattern.", code="invalid"
            )
        return super().to_internal_value(data)


class CurrencyField(serializers.ChoiceField):
    """An ISO 4217 code we bill in, in any case (``eur`` is EUR), as the services read it."""

    def __init__(self, **kwargs):
        super().__init__(choices=sorted(SUPPORTED_CURRENCIES), **kwargs)

    def to_internal_value(self, data):
        return super().to_internal_value(data.upper() if isinstance(data, str) else data)


def catalogue_amount(low: int, text: str, **kwargs) -> serializers.IntegerField:
    """An amount of the catalogue (a price, a coupon's amount off): from ``low`` to the most
    the catalogue services take (``MAX_AMOUNT``)."""
    return serializers.IntegerField(min_value=low, max_value=MAX_AMOUNT, help_text=text, **kwargs)
