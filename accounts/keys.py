"""Making, parsing and verifying API key tokens (CONTRACT §5).

A token is ``hms_`` + 12 base62 key id + 32 base62 secret + 6 base62 CRC32 of everything before
it. The checksum lets the server (and secret scanners) reject a mistyped or invented token
without touching the database. Storage keeps ``HMAC-SHA256(pepper, token)`` with the pepper's id.
"""

import hashlib
import hmac
import zlib
from dataclasses import dataclass

from django.conf import settings

from hosting.ids import BASE62, random_base62

TOKEN_PREFIX = "hms_"  # noqa: S105 - a public prefix, not a secret
KEY_ID_LENGTH = 12
SECRET_LENGTH = 32
CHECKSUM_LENGTH = 6
TOKEN_LENGTH = len(TOKEN_PREFIX) + KEY_ID_LENGTH + SECRET_LENGTH + CHECKSUM_LENGTH
_BASE62_SET = frozenset(BASE62)
# What a token of an unknown key id is compared with: the shape of a digest, never one we store.
_STAND_IN_DIGEST = "0" * 64


@dataclass(frozen=True)
class ParsedToken:
    token: str
    key_id: str


def _base62(number: int, width: int) -> str:
    digits = []
    while number:
        number, rest = divmod(number, 62)
        digits.append(BASE62[rest])
    return "".join(reversed(digits)).rjust(width, BASE62[0])


def _checksum(body: str) -> str:
    return _base62(zlib.crc32(body.encode("ascii")), CHECKSUM_LENGTH)


def make_token(prefix: str = TOKEN_PREFIX) -> tuple[str, str]:
    """Return a fresh ``(token, key_id)``; node tokens take the same shape under ``hmn_``."""
    key_id = random_base62(KEY_ID_LENGTH)
    body = f"{prefix}{key_id}{random_base62(SECRET_LENGTH)}"
    return body + _checksum(body), key_id


def parse_token(token: str, prefix: str = TOKEN_PREFIX) -> ParsedToken | None:
    """Check the shape and checksum; ``None`` for anything that cannot be one of our tokens."""
    if len(token) != TOKEN_LENGTH or not token.startswith(prefix):
        return None
    rest = token[len(prefix) :]
    if not _BASE62_SET.issuperset(rest):
        return None
    body, checksum = token[:-CHECKSUM_LENGTH], token[-CHECKSUM_LENGTH:]
    if not hmac.compare_digest(_checksum(body), checksum):
        return None
    return ParsedToken(token=token, key_id=rest[:KEY_ID_LENGTH])


def key_id_named(token: str, prefix: str = TOKEN_PREFIX) -> str | None:
    """The key id a token of our length and prefix names, without checking anything else
    (``parse_token`` does): for a look at what a process knows of it before that."""
    if len(token) != TOKEN_LENGTH or not token.startswith(prefix):
        return None
    return token[len(prefix) : len(prefix) + KEY_ID_LENGTH]


def current_pepper_id() -> str:
    return next(iter(settings.API_KEY_PEPPERS))


def digest_token(token: str, pepper_id: str) -> str | None:
    """HMAC of the token under the named pepper; ``None`` if that pepper is no longer configured."""
    pepper = settings.API_KEY_PEPPERS.get(pepper_id)
    if pepper is None:
        return None
    return hmac.new(pepper.encode(), token.encode("ascii"), hashlib.sha256).hexdigest()


def token_digest_now(token: str) -> tuple[str, str] | None:
    """``(pepper id, digest)`` of the token under the current pepper (the one new keys are made
    under), for a lookup that compares it with a cached key's; hand it to ``token_matches``,
    which then digests nothing again."""
    if not token.isascii():
        return None
    pepper_id = current_pepper_id()
    return pepper_id, digest_token(token, pepper_id) or ""


def token_matches(
    token: str,
    *,
    digest: str | None,
    pepper_id: str | None,
    computed: tuple[str, str] | None = None,
) -> bool:
    """Whether ``token`` digests to ``digest`` under ``pepper_id``, compared in constant time.

    Without a digest (the key id is unknown) or under a pepper no longer configured, the token
    is still digested and compared, against a stand-in, and never matches: every wrong token
    costs the same work, so the time of the answer does not tell whether a key id exists.
    """
    # Our tokens are ASCII; any other text (a header decoded as Latin-1, a surrogate) is simply
    # not one, and is digested as a stand-in of the same length so the work stays the same.
    if not token.isascii():
        token, digest = "?" * len(token), None
    known = digest is not None and pepper_id in settings.API_KEY_PEPPERS
    under = pepper_id if known else current_pepper_id()
    if computed is not None and computed[0] == under and token.isascii():
        candidate: str | None = computed[1]  # the same HMAC, already made
    else:
        candidate = digest_token(token, under)
    matches = hmac.compare_digest(candidate or "", digest if known else _STAND_IN_DIGEST)
    return known and matches
