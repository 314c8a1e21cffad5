"""Schemathesis hooks of scripts/fuzz.py (loaded through SCHEMATHESIS_HOOKS).

``filter_failure``: a 414 is gunicorn's answer to a request line over its limit, before the
application; the schema says so once, in its description, not on each operation (a response
without a body on every operation turns every return type of a generated client into ``Any``),
so what the checks say of a 414 (undocumented status, not the envelope) is not a failure.

``before_call``: a file pull is pinned to one path (scripts/schemathesis-objects.toml), and a pull
never writes over an entry, so after the first one every later case with that body would be a 409
``conflict``, and whether any case of an instance gets its 2xx would hang on which came first
(a restore or suspension in between). Each pinned pull gets a path of its own instead
(``/plugins-pulled.jar`` → ``/plugins-pulled-<n>.jar``); every other body goes as generated.

``after_call``: every call the fuzzer makes is counted per operation id and status code; when
the run ends the counts are written as JSON to FUZZ_COVERAGE_FILE (``{"<operationId>":
{"<status>": n}}``), which scripts/fuzz.py adds up over its passes to report how many cases
of each operation got a 2xx.
"""

import atexit
import itertools
import json
import os
import threading
from collections import Counter, defaultdict

import schemathesis

_counts: defaultdict[str, Counter] = defaultdict(Counter)
_lock = threading.Lock()
_pulls = itertools.count(1)
PINNED_PULL_PATH = "/plugins-pulled.jar"


@schemathesis.hook
def before_call(context, case, **kwargs) -> None:
    body = case.body
    if isinstance(body, dict) and body.get("path") == PINNED_PULL_PATH:
        operation = case.operation.definition.raw.get("operationId") or ""
        if operation.endswith("_files_pull_create"):
            case.body = body | {"path": f"/plugins-pulled-{next(_pulls)}.jar"}


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
