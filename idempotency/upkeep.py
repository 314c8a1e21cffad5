"""Idempotency records' periodic upkeep (run by ``manage.py housekeeping``)."""

from idempotency.services import idempotency_prune


def run() -> dict[str, int]:
    return {"idempotency records pruned": idempotency_prune()}
