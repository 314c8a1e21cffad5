"""Behaviour that only shows with several server processes: a real gunicorn with 2 workers.

PostgreSQL and Redis only: the workers must see the test database and share the cache and the
rate-limit counters, as production web processes do.
"""

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest
from django.conf import settings
from django.db import connection

from accounts.actors import SYSTEM, Actor
from accounts.models import Membership
from accounts.roles import Role
from accounts.services import account_suspend, api_key_revoke, member_change_role

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture(autouse=True)
def _needs_postgres_and_redis():
    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        pytest.skip("needs PostgreSQL and Redis shared by several processes")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def gunicorn(**env_overrides: str):
    """A production-like server (2 sync workers) on the test database; stopped afterwards."""
    port = _free_port()
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "REDIS_URL": settings.REDIS_URL,
        "SECURE_SSL_REDIRECT": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "DEBUG": "false",
        **env_overrides,
    }
    process = subprocess.Popen(  # noqa: S603 - our own interpreter and app
        [sys.executable, "-m", "gunicorn", "hosting.wsgi", "-w", "2", "-b", f"127.0.0.1:{port}"],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        else:
            raise RuntimeError("gunicorn did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def get(url: str, token: str) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def statuses(base: str, token: str, count: int = 12) -> set[int]:
    """Enough requests, from parallel connections, to reach both workers."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return set(pool.map(lambda _: get(f"{base}/v1/servers", token), range(count)))


def test_revocation_role_change_and_suspension_reach_every_process_at_once(
    owner, teammate, account, make_token
):
    revoked = make_token(owner, account, name="To revoke")
    demoted = make_token(teammate, account, ["servers:read"])
    suspended_too = make_token(owner, account, name="Until suspension")
    with gunicorn() as base:
        # Both workers have authenticated (and cached) every key.
        assert statuses(base, revoked) == {200}
        assert statuses(base, demoted) == {200}
        assert statuses(base, suspended_too) == {200}

        api_key_revoke(api_key=owner.api_keys.get(name="To revoke"), actor=SYSTEM)
        assert statuses(base, revoked) == {401}

        member_change_role(
            membership=Membership.objects.get(user=teammate),
            role=Role.BILLING,
            actor=Actor(user=owner),
        )
        assert statuses(base, demoted) == {403}

        account_suspend(account=account, reason="unpaid", actor=SYSTEM)
        assert statuses(base, suspended_too) == {403}


def status_and_window(url: str, token: str) -> tuple[int, str]:
    """The status and the end of the rate-limit window the request was counted in."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["X-RateLimit-Reset"]
    except urllib.error.HTTPError as error:
        return error.code, error.headers["X-RateLimit-Reset"]


def test_the_rate_limit_is_exact_across_processes_and_connections(owner, account, make_token):
    limit = 50
    token = make_token(owner, account)
    # More than twice the limit: even split by a minute boundary, one window goes over it.
    requests = 2 * limit + 10
    with gunicorn(RATE_LIMIT_PER_MINUTE=str(limit)) as base, ThreadPoolExecutor(8) as pool:
        url = f"{base}/v1/servers"
        answers = list(pool.map(lambda _: status_and_window(url, token), range(requests)))
    # Counted per window, as each answer reports it: the burst may straddle a minute boundary
    # (the other processes cannot share a test's clock), and then each window is exact on its own.
    windows: dict[str, list[int]] = {}
    for status, window in answers:
        windows.setdefault(window, []).append(status)
    for statuses_in_window in windows.values():
        allowed = min(limit, len(statuses_in_window))
        assert statuses_in_window.count(200) == allowed
        assert statuses_in_window.count(429) == len(statuses_in_window) - allowed
