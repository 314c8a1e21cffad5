"""Opaque resource identifiers: ``<prefix>_<24 base62 characters from secrets>`` (CONTRACT §2)."""

import secrets
import string

from django.db import models

BASE62 = string.digits + string.ascii_letters
ID_TOKEN_LENGTH = 24
# What an id in a path may look like: anything else (a NUL, a dot, a newline) matches no route,
# so no view and no database sees it. Clients treat ids as opaque strings of up to 64 characters.
ID_PATTERN = r"[A-Za-z0-9_]{1,64}"


class IdConverter:
    """``<id:pk>`` in a URL pattern: a path segment shaped as an id."""

    regex = ID_PATTERN

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


_UNBIASED = 62 * 4  # bytes below this map evenly onto the 62 characters


def random_base62(length: int) -> str:
    """``length`` uniform base62 characters from the OS's CSPRNG (bytes >= 248 are dropped)."""
    chars: list[str] = []
    while len(chars) < length:
        chars += [BASE62[byte % 62] for byte in secrets.token_bytes(length + 8) if byte < _UNBIASED]
    return "".join(chars[:length])


def new_id(prefix: str) -> str:
    return f"{prefix}_{random_base62(ID_TOKEN_LENGTH)}"


class PrefixedIdField(models.CharField):
    """A primary key that fills itself with a fresh prefixed id."""

    def __init__(self, prefix: str, **kwargs):
        self.prefix = prefix
        kwargs.setdefault("max_length", 64)
        kwargs.setdefault("primary_key", True)
        kwargs.setdefault("editable", False)
        super().__init__(**kwargs)

    def get_default(self) -> str:
        return new_id(self.prefix)

    def has_default(self) -> bool:
        return True

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        kwargs["prefix"] = self.prefix
        for key, value in (("max_length", 64), ("primary_key", True), ("editable", False)):
            if kwargs.get(key) == value:
                del kwargs[key]
        return name, path, args, kwargs
