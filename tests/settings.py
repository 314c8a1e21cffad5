"""The test run's settings: the service's own (hosting/settings.py), with nothing changed but what
keeps pytest-xdist's workers apart.

``pytest -n N`` runs the suite in N worker processes at once. pytest-django gives each worker its
own test database (``test_<name>_gw0``...); what lives outside the database is set apart here,
before hosting/settings.py reads it: worker ``gwK`` gets Redis database ``(base + K) % 16`` of
``REDIS_URL`` (tests flush their rate-limit counters, which would wipe another worker's), and a
var/ folder of its own under the run's (``VAR_DIR``/xdist-gwK: uploads, rate-limit counters).
Processes the tests start (the task worker, gunicorn) inherit the changed environment and import
these settings again; the change is made once (``TEST_WORKER_SETTINGS`` records it).
"""

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


def _apart(worker: str) -> None:
    index = int(worker.removeprefix("gw"))
    var_dir = Path(os.environ.get("VAR_DIR") or Path(__file__).resolve().parent.parent / "var")
    own = var_dir / f"xdist-{worker}"
    own.mkdir(parents=True, exist_ok=True)
    os.environ["VAR_DIR"] = str(own)
    os.environ["MEDIA_ROOT"] = str(own / "media")
    os.environ["RATE_LIMIT_SQLITE_PATH"] = str(own / "test-ratelimit.sqlite3")
    if redis_url := os.environ.get("REDIS_URL"):
        parts = urlsplit(redis_url)
        base = int(parts.path.strip("/") or 0)
        os.environ["REDIS_URL"] = urlunsplit(parts._replace(path=f"/{(base + index) % 16}"))
    os.environ["TEST_WORKER_SETTINGS"] = worker


_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker and os.environ.get("TEST_WORKER_SETTINGS") != _worker:
    _apart(_worker)

from hosting.settings import *  # noqa: E402, F403
