"""Shared fixtures: the owner / teammate / outsider trio and API clients with real keys."""

import importlib
import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import User
from accounts.roles import SCOPES, Role, StaffRole
from accounts.services import api_key_create
from hosting.api import throttling
from hosting.api.throttling import counter_store
from servers.services.catalogue import catalogue_sync
from tests.api_stack import install as api_requests_through_the_api_stack
from tests.factories import AccountFactory, MembershipFactory, UserFactory
from tests.s3 import s3_server  # noqa: F401 - a fixture: the S3 server process (tests/s3.py)
from tests.signed_in import install as force_login_signs_in_fully

# A test's force_login stands for a whole sign-in (password and second factor) just now.
force_login_signs_in_fully()
# /v1 through the API's own middleware stack, pages through theirs, as hosting.wsgi serves them.
api_requests_through_the_api_stack()


def auth_queries() -> int:
    """Queries authentication costs: none once the key lookup is in the shared (Redis) cache."""
    from accounts.key_cache import enabled

    return 0 if enabled() else 1


# What the second database's run (scripts/test: SQLite after PostgreSQL) leaves out, having
# run once already: folders and files whose outcome does not depend on the database (the node
# agent's tests start real agents and touch no database; the browser tests walk pages whose
# queries the view and API tests run on both; the OpenAPI document is built from code).
ONCE_FOLDERS_AND_FILES = (
    "tests/agent/",
    "tests/browser/",
    "tests/test_openapi.py",
    "tests/test_openapi_generated_clients.py",
)


def pytest_addoption(parser):
    parser.addoption(
        "--second-database",
        action="store_true",
        help="This run repeats the suite on another database: leave out the tests that never "
        "open the database and those of ONCE_FOLDERS_AND_FILES (tests/conftest.py).",
    )


def pytest_collection_modifyitems(config, items):
    if not config.getoption("second_database"):
        return
    kept, once = [], []
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        opens_database = item.get_closest_marker("django_db") is not None or (
            "_django_db_helper" in getattr(item, "fixturenames", ())
        )
        if path.startswith(ONCE_FOLDERS_AND_FILES) or not opens_database:
            once.append(item)
        else:
            kept.append(item)
    if once:
        config.hook.pytest_deselected(items=once)
        items[:] = kept


@pytest.fixture(autouse=True)
def _plain_http(settings):
    """Production settings redirect plain HTTP to HTTPS; the test client speaks plain HTTP."""
    settings.SECURE_SSL_REDIRECT = False


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The test database, migrated, with the game catalogue synced into it (``catalogue_sync``,
    as a deploy runs it after migrate: the migrations do not read the catalogue)."""
    with django_db_blocker.unblock():
        catalogue_sync()


@pytest.fixture(autouse=True)
def _catalogue_after_flushes(request):
    """Transactional tests flush the database between tests, taking the game and region
    catalogues that the migrations seed with it; put them back from the migrations' own data."""
    marker = request.node.get_closest_marker("django_db")
    if marker is None or not marker.kwargs.get("transaction"):
        return
    if not marker.kwargs.get("serialized_rollback"):
        # A transactional test without it ends with a flush that re-creates the content types
        # under new ids; the next serialized_rollback test then fails to restore the old rows
        # (duplicate key on django_content_type) at setup, whichever file it is in.
        pytest.fail("transactional tests must use django_db(serialized_rollback=True) too")
    request.getfixturevalue("transactional_db")
    from django.apps import apps

    games = importlib.import_module("servers.migrations.0002_seed_game_catalogue")
    lifecycle = importlib.import_module("servers.migrations.0003_lifecycle")
    games.add_games(apps, None)
    lifecycle.seed_regions_and_variables(apps, None)
    catalogue_sync()


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    """Every test starts with empty rate-limit counters (they live outside the database)."""
    counter_store().reset()


class Clock:
    """A clock that stands still until a test moves it."""

    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def rate_limit_clock(monkeypatch) -> Clock:
    """Rate-limit windows counted by a stopped clock, 30 seconds into the current minute: a
    counting test can never straddle the minute boundary where a fixed window resets."""
    clock = Clock(time.time() // throttling.WINDOW_SECONDS * throttling.WINDOW_SECONDS + 30)
    monkeypatch.setattr(throttling, "clock", clock)
    return clock


@pytest.fixture
def account(db):
    return AccountFactory(name="Owner's Hosting")


@pytest.fixture
def owner(account):
    return MembershipFactory(account=account, role=Role.OWNER).user


@pytest.fixture
def teammate(account):
    return MembershipFactory(account=account, role=Role.DEVELOPER).user


@pytest.fixture
def other_account(db):
    return AccountFactory(name="Someone Else's Hosting")


@pytest.fixture
def outsider(other_account):
    return MembershipFactory(account=other_account, role=Role.OWNER).user


# --- The hosting company's staff (an administrator, in an account of their own) --------------


@pytest.fixture
def staff_account(db):
    return AccountFactory(name="Hosting Company", created_at=datetime(2020, 1, 1, tzinfo=UTC))


@pytest.fixture
def staff(staff_account):
    user = UserFactory(
        email="ops@hosting.example", is_staff=True, staff_role=StaffRole.ADMINISTRATOR
    )
    MembershipFactory(account=staff_account, user=user, role=Role.OWNER)
    return user


@pytest.fixture
def staff_api(staff, staff_account, make_token, client_for) -> APIClient:
    return client_for(make_token(staff, staff_account, ["admin:read", "admin:write"]))


@pytest.fixture
def staff_reader_api(staff, staff_account, make_token, client_for) -> APIClient:
    return client_for(make_token(staff, staff_account, ["admin:read"]))


# --- The admin site's staff: a superuser, signed in at /admin/ ---------------------------------


@pytest.fixture
def superuser(db) -> User:
    """Who the admin site's tests act as; signs in with the password ``staff-password-1``."""
    return User.objects.create_superuser(email="staff@hosting.test", password="staff-password-1")


@pytest.fixture
def staff_client(superuser) -> Client:
    """A browser signed in to the admin site as ``superuser``."""
    client = Client()
    client.force_login(superuser)
    return client


@pytest.fixture
def make_token() -> Callable[..., str]:
    """Create a real key through the service and return its token."""

    def make(user, account, scopes=None, **kwargs) -> str:
        _, token = api_key_create(
            account=account,
            user=user,
            name=kwargs.pop("name", "Test key"),
            scopes=list(SCOPES) if scopes is None else scopes,
            **kwargs,
        )
        return token

    return make


@pytest.fixture
def client_for() -> Callable[[str | None], APIClient]:
    def make(token: str | None) -> APIClient:
        client = APIClient()
        if token:
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        return client

    return make


@pytest.fixture
def owner_api(owner, account, make_token, client_for) -> APIClient:
    return client_for(make_token(owner, account))


@pytest.fixture
def teammate_api(teammate, account, make_token, client_for) -> APIClient:
    return client_for(make_token(teammate, account, ["servers:read"]))


@pytest.fixture
def outsider_api(outsider, other_account, make_token, client_for) -> APIClient:
    return client_for(make_token(outsider, other_account))
