"""Times as the protocol writes them: ISO 8601 in UTC, whole seconds, ``Z``."""

import time
from datetime import UTC, datetime


def iso(epoch: float | None = None) -> str:
    moment = datetime.fromtimestamp(time.time() if epoch is None else epoch, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
