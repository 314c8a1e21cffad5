"""One Redis client per URL and process, for the hot path (rate limits, API key lookups).

Django's Redis cache backend builds a new ``redis.Redis`` object for every operation, which
costs more than the round trip itself; the hot path talks to redis-py directly through this
shared client instead. redis-py's connection pool notices a fork and opens fresh connections in
each gunicorn worker.

``KeptScript`` runs a Lua script on every request (the key lookup and count,
accounts/key_cache.py) on that client's connections without redis-py's per-command layers, and
can send it without waiting for its answer (``send``), to be read after other work (the list
statement of a hot list, issue 35).
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

    def send(self, *, keys: Sequence[Any], args: Sequence[Any]) -> "SentScript | None":
        """The call sent, its answer read later by ``SentScript.read`` (which must be called:
        it gives the connection back); None when it could not be sent (a broken connection,
        say: closed, nothing was run), and the caller calls the script the ordinary way."""
        pool = self.client.connection_pool
        connection = pool.get_connection()
        command = self._command(keys, args)
        try:
            connection.send_command(*command)
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            connection.disconnect()
            pool.release(connection)
            return None
        except BaseException:
            pool.release(connection)
            raise
        return SentScript(self, connection, keys, args)

    def _command(self, keys: Sequence[Any], args: Sequence[Any]) -> tuple:
        return ("EVALSHA", self.sha, len(keys), *keys, *args)

    def _run(self, connection, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        connection.send_command(*self._command(keys, args))
        return self._answer(connection, keys, args)

    def _answer(self, connection, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """The answer of the call just sent on ``connection`` (loaded and sent again when
        Redis did not know the script: it ran nothing)."""
        try:
            return connection.read_response()
        except NoScriptError:
            connection.send_command("SCRIPT", "LOAD", self.text)
            connection.read_response()
            connection.send_command(*self._command(keys, args))
            return connection.read_response()


class SentScript:
    """A ``KeptScript`` call sent and not read yet, holding its pooled connection."""

    def __init__(self, script: KeptScript, connection, keys: Sequence[Any], args: Sequence[Any]):
        self.script, self.connection, self.keys, self.args = script, connection, keys, args
        self._done = False

    def read(self) -> Any:
        """The call's answer, as ``KeptScript.__call__`` would have answered it: a connection
        that breaks while it is read is closed and the call run again as far as the
        connection's retry policy allows (redis-py's for any command), the error raised
        otherwise. The connection goes back to the pool in every case; a second read is an
        error."""
        if self._done:
            raise RuntimeError("a sent script's answer is read once")
        self._done = True
        script, connection, keys, args = self.script, self.connection, self.keys, self.args
        attempts = [lambda: script._answer(connection, keys, args)]  # the call already sent

        def attempt() -> Any:
            return attempts.pop()() if attempts else script._run(connection, keys, args)

        try:
            return connection.retry.call_with_retry(attempt, lambda _error: connection.disconnect())
        finally:
            script.client.connection_pool.release(connection)

    def abandon(self) -> None:
        """Leave the answer unread (the process is being stopped, say): the connection, whose
        next reply is that answer, is closed and given back. The script may have run."""
        if self._done:
            return
        self._done = True
        self.connection.disconnect()
        self.script.client.connection_pool.release(self.connection)
