"""Encryption at rest for secrets the service must give back to a machine (Discord bot tokens)
or, once and soon, to a person (a new API key's token on its way through the session).

Fernet (AES-128-CBC + HMAC-SHA256) with the keys of ``SECRET_ENCRYPTION_KEYS``: the first encrypts,
every listed key decrypts, so keys can be rotated by putting a new one first. Fernet tokens carry
their creation time, so a short-lived secret is refused (``InvalidToken``) once ``max_age`` has
passed.
"""

from functools import cache

from cryptography.fernet import Fernet, MultiFernet
from django.conf import settings


@cache
def _box() -> MultiFernet:
    return MultiFernet([Fernet(key) for key in settings.SECRET_ENCRYPTION_KEYS])


def encrypt_secret(value: str) -> str:
    return _box().encrypt(value.encode()).decode()


def decrypt_secret(value: str, *, max_age: int | None = None) -> str:
    """The secret; ``InvalidToken`` if it was tampered with or is older than ``max_age`` seconds."""
    return _box().decrypt(value.encode(), ttl=max_age).decode()
