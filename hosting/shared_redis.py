"""One Redis client per URL and process, for the hot path (rate limits, API key lookups).

Django's Redis cache backend builds a new ``redis.Redis`` object for every operation, which
costs more than the round trip itself; the hot path talks to redis-py directly through this
shared client instead. redis-py's connection pool notices a fork and opens fresh connections in
each gunicorn worker.

``KeptScript`` runs a Lua script on every request (the key lookup and count,
accounts/key_cache.py) on that client's connections without redis-py's per-command layers.
"""

import hashlib
from collections.abc import Sequence
from functools import cache
from typing import Any

import redis
from redis.exceptions import NoScriptError


@cache
def redis_client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url)


class KeptScript:
    """A Lua script called as ``script(keys=[...], args=[...])``, as redis-py's ``Script`` is:
    ``EVALSHA`` on a connection of ``client``'s pool, loaded (``SCRIPT LOAD``) when Redis does
    not know it yet (after a restart, say), a broken connection closed (and the call retried
    if the connection's retry policy says so), as redis-py does for any command. What it leaves
    out is what redis-py adds per command (the command's dispatch, response callbacks,
    observability hooks): about half of the call's CPU on the hot path (bench/README.md). The
    reply is Redis's own (bytes, integers, None, lists)."""

    def __init__(self, client: redis.Redis, text: str) -> None:
        self.client, self.text = client, text
        self.sha = hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()

    def __call__(self, *, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        pool = self.client.connection_pool
        connection = pool.get_connection()
        try:
            return connection.retry.call_with_retry(
                lambda: self._run(connection, keys, args),
                lambda _error: connection.disconnect(),
            )
        finally:
            pool.release(connection)

    def _run(self, connection, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        command = ("EVALSHA", self.sha, len(keys), *keys, *args)
        connection.send_command(*command)
        try:
            return connection.read_response()
        except NoScriptError:
            connection.send_command("SCRIPT", "LOAD", self.text)
            connection.read_response()
            connection.send_command(*command)
            return connection.read_response()
