"""Fixed-window rate limiting shared by every process (CONTRACT §6).

Counters live in Redis when ``REDIS_URL`` is set (atomic INCR, right for many hosts) and
otherwise in a SQLite file on this host (one atomic UPSERT per hit, right for every process of
one host). A bucket is a key id or, for unauthenticated and failed requests, a client address.
"""

import math
import sqlite3
import threading
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from django.conf import settings

from hosting.errors import RateLimited
from hosting.shared_redis import redis_client

WINDOW_SECONDS = 60

# The clock windows are counted by (seconds since the epoch); tests replace it to pin a window.
clock = time.time


@dataclass(frozen=True)
class RateLimitState:
    policy: str
    limit: int
    count: int
    reset_at: int
    now: float

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.count)

    @property
    def exceeded(self) -> bool:
        return self.count > self.limit

    @property
    def seconds_to_reset(self) -> int:
        return max(1, math.ceil(self.reset_at - self.now))

    def headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset_at),
            "RateLimit-Policy": f'"{self.policy}";q={self.limit};w={WINDOW_SECONDS}',
            "RateLimit": f'"{self.policy}";r={self.remaining};t={self.seconds_to_reset}',
        }


# A counter lives two windows, then expires by itself.
COUNTER_TTL = WINDOW_SECONDS * 2

# INCR and, for a new window, EXPIRE in one command: one round trip, atomic on the server.
# (accounts/key_cache.py's lookup counts a key's request with the same two commands.)
_HIT_SCRIPT = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count
"""


class RedisCounterStore:
    def __init__(self, url: str, prefix: str = "hms:rl:"):
        self.client = redis_client(url)
        self.prefix = prefix
        self._hit = self.client.register_script(_HIT_SCRIPT)

    def key(self, bucket: str, window_start: int) -> str:
        return f"{self.prefix}{bucket}:{window_start}"

    def hit(self, bucket: str, window_start: int) -> int:
        return int(self._hit(keys=[self.key(bucket, window_start)], args=[COUNTER_TTL]))

    def unhit(self, bucket: str, window_start: int) -> None:
        self.client.decr(self.key(bucket, window_start))

    def prune(self, *, before: int) -> int:
        """Nothing to do: every counter expires by itself two windows after it starts."""
        return 0

    def reset(self) -> None:
        for key in self.client.scan_iter(match=f"{self.prefix}*", count=500):
            self.client.delete(key)


class SQLiteCounterStore:
    """Counters in a small SQLite file: each hit is one atomic statement across processes."""

    _UPSERT = (
        "INSERT INTO counters (bucket, window_start, count) VALUES (?, ?, 1) "
        "ON CONFLICT (bucket) DO UPDATE SET "
        "count = CASE WHEN window_start = excluded.window_start THEN count + 1 ELSE 1 END, "
        "window_start = excluded.window_start "
        "RETURNING count"
    )

    def __init__(self, path: str):
        self.path = path
        self._local = threading.local()
        Path(path).parent.mkdir(parents=True, exist_ok=True)

    def _connection(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=10, isolation_level=None)
            connection.execute("PRAGMA journal_mode=WAL")
            # Counters are worth nothing after a crash; skipping fsync keeps a hit in microseconds.
            connection.execute("PRAGMA synchronous=OFF")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS counters "
                "(bucket TEXT PRIMARY KEY, window_start INTEGER NOT NULL, count INTEGER NOT NULL)"
            )
            self._local.connection = connection
        return connection

    def hit(self, bucket: str, window_start: int) -> int:
        connection = self._connection()
        (count,) = connection.execute(self._UPSERT, (bucket, window_start)).fetchone()
        return int(count)

    def unhit(self, bucket: str, window_start: int) -> None:
        self._connection().execute(
            "UPDATE counters SET count = count - 1 WHERE bucket = ? AND window_start = ?",
            (bucket, window_start),
        )

    def prune(self, *, before: int) -> int:
        """Delete the counters of windows that started before ``before``; return how many."""
        return (
            self._connection()
            .execute("DELETE FROM counters WHERE window_start < ?", (before,))
            .rowcount
        )

    def reset(self) -> None:
        self._connection().execute("DELETE FROM counters")


@cache
def counter_store() -> RedisCounterStore | SQLiteCounterStore:
    if settings.REDIS_URL:
        return RedisCounterStore(settings.REDIS_URL)
    return SQLiteCounterStore(settings.RATE_LIMIT_SQLITE_PATH)


def _window_start(now: float) -> int:
    return int(now // WINDOW_SECONDS) * WINDOW_SECONDS


@dataclass(frozen=True)
class RateLimitWindow:
    """The window a request is counted in, read once from the clock."""

    now: float
    start: int

    @classmethod
    def current(cls) -> "RateLimitWindow":
        now = clock()
        return cls(now=now, start=_window_start(now))

    def shared_key(self, bucket: str) -> str | None:
        """The Redis key of ``bucket``'s counter in this window, for a caller that counts the
        request in a round trip it makes anyway (the API key lookup: ``INCR`` it, and ``EXPIRE``
        it ``COUNTER_TTL`` when the count is 1); None when the counters are not in Redis."""
        store = counter_store()
        return store.key(bucket, self.start) if isinstance(store, RedisCounterStore) else None

    def state(self, *, count: int, limit: int, policy: str) -> RateLimitState:
        """The state after a request counted ``count``; ``RateLimited`` once over ``limit``."""
        state = RateLimitState(
            policy=policy,
            limit=limit,
            count=count,
            reset_at=self.start + WINDOW_SECONDS,
            now=self.now,
        )
        if state.exceeded:
            raise RateLimitExceeded(state)
        return state

    def count(self, bucket: str) -> int:
        """Count one request against ``bucket``; the count in this window, this one included."""
        return counter_store().hit(bucket, self.start)

    def hit(self, *, bucket: str, limit: int, policy: str) -> RateLimitState:
        """Count one request against ``bucket``; raise ``RateLimited`` once over ``limit``."""
        count = counter_store().hit(bucket, self.start)
        return self.state(count=count, limit=limit, policy=policy)

    def unhit(self, bucket: str) -> None:
        """Take back one request counted against ``bucket`` in this window."""
        counter_store().unhit(bucket, self.start)


def rate_limit_hit(*, bucket: str, limit: int, policy: str) -> RateLimitState:
    """Count one request against ``bucket``; raise ``RateLimited`` once it is over ``limit``."""
    return RateLimitWindow.current().hit(bucket=bucket, limit=limit, policy=policy)


def rate_limit_prune() -> int:
    """Delete the counters of past windows (the SQLite store keeps a row per bucket until then);
    return how many. Run by housekeeping, never on a request."""
    return counter_store().prune(before=_window_start(clock()))


class RateLimitExceeded(RateLimited):
    """``rate_limited`` carrying the state, so the response gets the limit headers too."""

    def __init__(self, state: RateLimitState):
        self.state = state
        super().__init__(
            f"Rate limit of {state.limit} requests per {WINDOW_SECONDS} seconds exceeded; "
            f"retry in {state.seconds_to_reset} seconds.",
            details={"retry_after": state.seconds_to_reset},
        )
