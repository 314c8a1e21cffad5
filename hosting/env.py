"""Typed readers for settings that come from the environment.

Each reader fails loudly (ImproperlyConfigured naming the variable) on a value it cannot
parse, so a typo in a deployment stops the process at start-up instead of changing behaviour.
"""

import os

from django.core.exceptions import ImproperlyConfigured
from stdnum import bic, iban
from stdnum.exceptions import ValidationError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return default if value is None else value.strip()


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name} must be one of true/false/1/0/yes/no/on/off, got {value!r}."
    )


def env_int(
    name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    try:
        number = int(value.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}.") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {number}.")
    if maximum is not None and number > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, got {number}.")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_prefixed(prefix: str) -> dict[str, str]:
    """Every non-empty variable named ``<prefix>…``, keyed by the rest of its name: settings a
    library reads as one dictionary (``ANYMAIL``) without a reader per key."""
    return {
        name.removeprefix(prefix): value.strip()
        for name, value in os.environ.items()
        if name.startswith(prefix) and name != prefix and value.strip()
    }


def parse_peppers(name: str, value: str) -> dict[str, str]:
    """Parse ``id=secret,id=secret``; the first entry is the one new keys are made with.

    Older peppers stay listed so keys digested with them keep working until they are rotated.
    """
    peppers: dict[str, str] = {}
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        pepper_id, sep, secret = item.partition("=")
        pepper_id = pepper_id.strip()
        if not sep or not pepper_id.isalnum() or len(pepper_id) > 16:
            raise ImproperlyConfigured(
                f"{name} entries must look like 'id=secret' with an alphanumeric id "
                f"of at most 16 characters; got an entry starting {pepper_id[:16]!r}."
            )
        if len(secret) < 32:
            raise ImproperlyConfigured(
                f"{name}: the pepper {pepper_id!r} must be at least 32 characters long."
            )
        if pepper_id in peppers:
            raise ImproperlyConfigured(f"{name}: the pepper id {pepper_id!r} appears twice.")
        peppers[pepper_id] = secret
    if not peppers:
        raise ImproperlyConfigured(f"{name} must list at least one 'id=secret' pepper.")
    return peppers


def parse_iban(name: str, value: str) -> str:
    """An IBAN whose country, length and check digits are right, in the groups of four it is
    printed in (``BE71 0961 2345 6769``): a mistyped one would send customers' transfers astray."""
    try:
        return iban.format(iban.validate(value))
    except ValidationError as error:
        raise ImproperlyConfigured(
            f"{name} must be an IBAN with its country, check digits and account number, "
            f"got {value!r}: {error.message}"
        ) from None


def parse_bic(name: str, value: str) -> str:
    """A BIC (SWIFT code) of 8 or 11 characters, upper case."""
    try:
        return bic.validate(value)
    except ValidationError as error:
        raise ImproperlyConfigured(
            f"{name} must be a BIC of 8 or 11 letters and digits, got {value!r}: {error.message}"
        ) from None
