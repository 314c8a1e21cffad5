"""What the tests of the Redis path share: skipping without Redis, a key's count in the
current window, and a connection whose reply is lost once."""

import contextlib
from collections.abc import Iterator
from unittest import mock

import pytest
import redis
from redis.connection import AbstractConnection

from accounts import key_cache
from hosting.api import throttling
from hosting.shared_redis import redis_client


def skip_without_redis(reason: str) -> None:
    """Skip the calling test when the shared key cache (Redis) is off: ``reason`` says why."""
    if not key_cache.enabled():
        pytest.skip(reason)


def key_count(key_id: str) -> int:
    """How many requests the key's counter holds in the current window."""
    window = throttling.RateLimitWindow.current()
    return int(
        redis_client(throttling.settings.REDIS_URL).get(window.shared_key(f"key:{key_id}")) or 0
    )


@contextlib.contextmanager
def reply_lost_once() -> Iterator[list]:
    """The next reply read from any Redis connection is lost (the command ran, its answer
    never came): reading it raises ``ConnectionError``. Yields the list that gets the
    connection it happened on; later reads are Redis's own."""
    read = AbstractConnection.read_response
    broke: list = []

    def breaks_once(connection, *args, **kwargs):
        if not broke:
            broke.append(connection)
            raise redis.exceptions.ConnectionError("Connection closed by server.")
        return read(connection, *args, **kwargs)

    with mock.patch.object(AbstractConnection, "read_response", autospec=True) as reading:
        reading.side_effect = breaks_once
        yield broke
