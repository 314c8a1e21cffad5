"""Encryption at rest for secrets the service must give back to a machine (Discord bot tokens).

Fernet (AES-128-CBC + HMAC-SHA256) with the keys of ``SECRET_ENCRYPTION_KEYS``: the first encrypts,
every listed key decrypts, so keys can be rotated by putting a new one first.
"""

from functools import cache

from cryptography.fernet import Fernet, MultiFernet
from django.conf import settings


@cache
def _box() -> MultiFernet:
    return MultiFernet([Fernet(key) for key in settings.SECRET_ENCRYPTION_KEYS])


def encrypt_secret(value: str) -> str:
    return _box().encrypt(value.encode()).decode()


def decrypt_secret(value: str) -> str:
    return _box().decrypt(value.encode()).decode()
