"""Schemathesis hooks of scripts/fuzz.py (loaded through SCHEMATHESIS_HOOKS).

``filter_failure``: a 414 is gunicorn's answer to a request line over its limit, before the
application; the schema says so once, in its description, not on each operation (a response
without a body on every operation turns every return type of a generated client into ``Any``),
so what the checks say of a 414 (undocumented status, not the envelope) is not a failure.

``after_call``: every call the fuzzer makes is counted per operation id and status code; when
the run ends the counts are written as JSON to FUZZ_COVERAGE_FILE (``{"<operationId>":
{"<status>": n}}``), which scripts/fuzz.py adds up over its passes to report how many cases
of each operation got a 2xx.
"""

import atexit
import json
import os
import threading
from collections import Counter, defaultdict

import schemathesis

_counts: defaultdict[str, Counter] = defaultdict(Counter)
_lock = threading.Lock()


@schemathesis.hook
def after_call(context, case, response) -> None:
    operation = case.operation.definition.raw.get("operationId") or case.operation.label
    with _lock:
        _counts[operation][str(response.status_code)] += 1


@schemathesis.hook
def filter_failure(context, failure, case, response) -> bool:
    return response.status_code != 414


def _write() -> None:
    path = os.environ.get("FUZZ_COVERAGE_FILE")
    if path:
        with _lock, open(path, "w") as out:
            json.dump({operation: dict(counts) for operation, counts in _counts.items()}, out)


atexit.register(_write)
