"""One Redis client per URL and process, for the hot path (rate limits, API key lookups).

Django's Redis cache backend builds a new ``redis.Redis`` object for every operation, which
costs more than the round trip itself; the hot path talks to redis-py directly through this
shared client instead. redis-py's connection pool notices a fork and opens fresh connections in
each gunicorn worker.
"""

from functools import cache

import redis


@cache
def redis_client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url)
