"""The raw baseline for ``GET /v1/servers``: plain WSGI, psycopg 3 and orjson (not a test).

    gunicorn bench.raw_app:application -c gunicorn.conf.py

It does the work the real endpoint must do and nothing else, to measure the practical limit
of Python here: parse the bearer token and its checksum (as ``accounts/keys.py``), look the key
up by its key id with the user, the account and the member's role in one statement, check the
token's HMAC under the key's pepper, revoked/expired/suspended and the ``servers:read`` scope,
read the account's maintained server count, and read one page ordered by ``created_at`` desc,
``id`` desc (a deep page from the month it starts in, as the endpoint does). The answer is the
same JSON envelope. One persistent connection per worker process, opened on the first request
(after gunicorn's fork). Needs ``DATABASE_URL`` and ``API_KEY_PEPPERS``.
"""

import datetime
import hashlib
import hmac
import math
import os
import string
import zlib
from urllib.parse import parse_qs

import orjson
import psycopg

BASE62 = string.digits + string.ascii_letters
PREFIX = "hms_"
TOKEN_LENGTH = len(PREFIX) + 12 + 32 + 6
MAX_PER_PAGE = 100

KEY_SQL = """
SELECT k.digest, k.pepper_id, k.scopes, k.revoked_at, k.expires_at, u.is_active, a.status,
       (SELECT m.role FROM accounts_membership m
         WHERE m.account_id = k.account_id AND m.user_id = k.user_id LIMIT 1),
       k.account_id
  FROM accounts_apikey k
  JOIN accounts_user u ON u.id = k.user_id
  JOIN accounts_account a ON a.id = k.account_id
 WHERE k.key_id = %s
"""
# The total from the maintained counts, as the endpoint reads it (servers/counts.py).
COUNT_SQL = """
SELECT coalesce(sum(delta), 0)::bigint FROM servers_instancecount
 WHERE account_id = %s AND kind = 'server'
"""
PAGE_SQL = """
SELECT id, name, game_id, status, created_at FROM servers_server
 WHERE account_id = %s AND deleted_at IS NULL
 ORDER BY created_at DESC, id DESC LIMIT %s OFFSET %s
"""
# Deep pages (offset >= 1,000) as the endpoint fetches them: the per-month counts, then the
# page among the rows created before the start of the month after the page's own month.
MONTHS_SQL = """
SELECT month, sum(delta)::bigint FROM servers_instancecount
 WHERE account_id = %s AND kind = 'server'
 GROUP BY month HAVING sum(delta) <> 0 ORDER BY month DESC
"""
SEEK_PAGE_SQL = """
SELECT id, name, game_id, status, created_at FROM servers_server
 WHERE account_id = %s AND deleted_at IS NULL AND created_at < %s
 ORDER BY created_at DESC, id DESC LIMIT %s OFFSET %s
"""
# ... and from 1,000 rows into that month on, the page's keys first (hosting.api.pagination).
SEEK_KEYS_PAGE_SQL = """
SELECT id, name, game_id, status, created_at FROM servers_server
 WHERE account_id = %s AND deleted_at IS NULL AND created_at < %s AND id IN (
     SELECT id FROM servers_server WHERE account_id = %s AND deleted_at IS NULL
        AND created_at < %s
      ORDER BY created_at DESC, id DESC LIMIT %s OFFSET %s)
 ORDER BY created_at DESC, id DESC
"""
DEEP_OFFSET = 1000


def _peppers(value: str) -> dict[str, bytes]:
    """``id=secret,id=secret`` as in ``hosting.env.parse_peppers`` (without its checks)."""
    pairs = (item.strip().partition("=") for item in value.split(",") if item.strip())
    return {pepper_id.strip(): secret.encode() for pepper_id, _, secret in pairs}


PEPPERS = _peppers(os.environ.get("API_KEY_PEPPERS", ""))
_connection: psycopg.Connection | None = None


def _base62(number: int, width: int) -> str:
    digits = []
    while number:
        number, rest = divmod(number, 62)
        digits.append(BASE62[rest])
    return "".join(reversed(digits)).rjust(width, BASE62[0])


def _key_id(header: str) -> tuple[str, str] | None:
    """``(token, key_id)`` from ``Bearer <token>`` when shape and checksum are right."""
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or len(token) != TOKEN_LENGTH or not token.startswith(PREFIX):
        return None
    body, checksum = token[:-6], token[-6:]
    if not hmac.compare_digest(_base62(zlib.crc32(body.encode("ascii")), 6), checksum):
        return None
    return token, token[len(PREFIX) : len(PREFIX) + 12]


def _db() -> psycopg.Connection:
    """This worker's connection, opened on first use and again after it broke."""
    global _connection
    if _connection is None or _connection.closed or _connection.broken:
        _connection = psycopg.connect(
            os.environ["DATABASE_URL"], autocommit=True, options="-c TimeZone=UTC"
        )
    return _connection


def _authenticate(cursor, header: str) -> str | None:
    """The account id of a valid key with ``servers:read``, else ``None``."""
    parsed = _key_id(header)
    if parsed is None:
        return None
    token, key_id = parsed
    row = cursor.execute(KEY_SQL, (key_id,)).fetchone()
    if row is None:
        return None
    digest, pepper_id, scopes, revoked_at, expires_at, is_active, status, role, account_id = row
    pepper = PEPPERS.get(pepper_id)
    if pepper is None:
        return None
    candidate = hmac.new(pepper, token.encode("ascii"), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(candidate, digest) or role is None or not is_active:
        return None
    now = datetime.datetime.now(datetime.UTC)
    if (revoked_at and revoked_at <= now) or (expires_at and expires_at <= now):
        return None
    if status == "suspended" or "servers:read" not in scopes:
        return None
    return account_id


def _int_param(params: dict, name: str, default: int) -> int:
    try:
        return max(1, int(params.get(name, [default])[0]))
    except ValueError:
        return default


def _respond(start_response, status: str, payload: dict) -> list[bytes]:
    body = orjson.dumps(payload)
    start_response(
        status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    )
    return [body]


def application(environ, start_response):
    """``GET /v1/servers`` only; anything else is a 404."""
    if environ.get("PATH_INFO") != "/v1/servers":
        return _respond(start_response, "404 Not Found", {"success": False})
    params = parse_qs(environ.get("QUERY_STRING", ""))
    page = _int_param(params, "page", 1)
    per_page = min(_int_param(params, "per_page", 25), MAX_PER_PAGE)
    with _db().cursor() as cursor:
        account_id = _authenticate(cursor, environ.get("HTTP_AUTHORIZATION", ""))
        if account_id is None:
            return _respond(start_response, "401 Unauthorized", {"success": False})
        offset = (page - 1) * per_page
        if offset < DEEP_OFFSET:
            total = cursor.execute(COUNT_SQL, (account_id,)).fetchone()[0]
            rows = (
                cursor.execute(PAGE_SQL, (account_id, per_page, offset)).fetchall()
                if offset < total
                else []
            )
        else:
            months = cursor.execute(MONTHS_SQL, (account_id,)).fetchall()
            total, rows = sum(count for _, count in months), []
            newer = 0
            for month, count in months:
                if offset < newer + count:
                    following = (month.replace(day=28) + datetime.timedelta(days=4)).replace(day=1)
                    before = datetime.datetime.combine(following, datetime.time(), datetime.UTC)
                    skip = offset - newer
                    if skip < DEEP_OFFSET:
                        seek = (account_id, before, per_page, skip)
                        rows = cursor.execute(SEEK_PAGE_SQL, seek).fetchall()
                    else:
                        seek = (account_id, before, account_id, before, per_page, skip)
                        rows = cursor.execute(SEEK_KEYS_PAGE_SQL, seek).fetchall()
                    break
                newer += count
    servers = [
        {
            "id": id_,
            "name": name,
            "game": game,
            "status": status,
            "created_at": created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        for id_, name, game, status, created_at in rows
    ]
    pagination = {
        "page": page,
        "per_page": per_page,
        "total": total,
        "total_pages": max(1, math.ceil(total / per_page)),
    }
    return _respond(
        start_response,
        "200 OK",
        {"success": True, "data": {"servers": servers, "pagination": pagination}},
    )
