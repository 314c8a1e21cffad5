"""The control plane's Ed25519 key: it signs short-lived JWTs that agents verify.

Two kinds, both ``EdDSA`` with ``iss`` = ``hosting-control-plane`` and ``aud`` = the node's id:
request tokens (``scope: "node"``, one minute) on the control plane's own calls to an agent, and
console tokens (``server_id``, ``permissions``, ``CONSOLE_TOKEN_SECONDS``) that the dashboard
hands to a browser for one server's console. Agents learn the public key from their ``hello``.
The node token itself is kept only as a digest, so it cannot sign anything here.
"""

import base64
import hashlib
import time
from functools import cache

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from hosting.ids import random_base62

ISSUER = "hosting-control-plane"
REQUEST_TOKEN_SECONDS = 60


@cache
def _private_key() -> Ed25519PrivateKey:
    if settings.AGENT_SIGNING_KEY:
        try:
            seed = base64.urlsafe_b64decode(settings.AGENT_SIGNING_KEY)
        except ValueError:
            seed = b""
        if len(seed) != 32:
            raise ImproperlyConfigured("AGENT_SIGNING_KEY must be 32 bytes in url-safe base64.")
    else:
        seed = hashlib.sha256(b"agent-signing-key:" + settings.SECRET_KEY.encode()).digest()
    return Ed25519PrivateKey.from_private_bytes(seed)


def public_key_pem() -> str:
    """What agents verify with (sent in the answer to ``hello``)."""
    return (
        _private_key()
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def _sign(claims: dict, lifetime: int) -> tuple[str, int]:
    now = int(time.time())
    expires = now + lifetime
    payload = {"iss": ISSUER, "iat": now, "exp": expires, "jti": random_base62(16), **claims}
    return jwt.encode(payload, _private_key(), algorithm="EdDSA"), expires


def request_token(node_id: str) -> str:
    """The bearer token of one control-plane call to the node's agent."""
    return _sign({"aud": node_id, "scope": "node"}, REQUEST_TOKEN_SECONDS)[0]


def console_token(*, node_id: str, instance_id: str, user_id: str, write: bool) -> tuple[str, int]:
    """A console token for one user and one server or bot: ``(token, expires_at)``."""
    permissions = ["console.read", "console.write"] if write else ["console.read"]
    return _sign(
        {"aud": node_id, "sub": str(user_id), "server_id": instance_id, "permissions": permissions},
        settings.CONSOLE_TOKEN_SECONDS,
    )


def file_token(
    *, node_id: str, instance_id: str, user_id: str, path: str, permission: str
) -> tuple[str, int]:
    """A file transfer token for one user, one server or bot and one path: ``(token,
    expires_at)``. ``permission``: ``files.download`` or ``files.upload``."""
    return _sign(
        {
            "aud": node_id,
            "sub": str(user_id),
            "server_id": instance_id,
            "path": path,
            "permissions": [permission],
        },
        settings.FILE_URL_SECONDS,
    )


def backup_token(
    *, node_id: str, instance_id: str, user_id: str, backup_id: str
) -> tuple[str, int]:
    """A download token of one node-stored backup for one user: ``(token, expires_at)``,
    like ``file_token``'s with a ``backup_id`` claim instead of a path."""
    return _sign(
        {
            "aud": node_id,
            "sub": str(user_id),
            "server_id": instance_id,
            "backup_id": backup_id,
            "permissions": ["backups.download"],
        },
        settings.BACKUP_URL_SECONDS,
    )
