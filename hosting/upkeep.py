"""The project package's own upkeep (run by ``manage.py housekeeping``, as each app's is)."""

from hosting.api.throttling import rate_limit_prune


def run() -> dict[str, int]:
    return {"rate-limit counters pruned": rate_limit_prune()}
