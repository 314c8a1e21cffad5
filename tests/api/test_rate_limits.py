import pytest

from hosting.api.throttling import SQLiteCounterStore, rate_limit_prune


@pytest.fixture
def small_limits(settings):
    settings.RATE_LIMIT_PER_MINUTE = 5
    settings.RATE_LIMIT_ANON_PER_MINUTE = 3


@pytest.fixture(autouse=True)
def _one_window(rate_limit_clock):
    """A fixed window resets on the minute: every test here counts within one window."""


def test_an_authenticated_response_carries_the_limit_headers(owner_api, rate_limit_clock):
    response = owner_api.get("/v1/servers")
    assert response["X-RateLimit-Limit"] == "600"
    assert response["X-RateLimit-Remaining"] == "599"
    assert int(response["X-RateLimit-Reset"]) == rate_limit_clock.now + 30
    assert int(response["X-RateLimit-Reset"]) % 60 == 0
    assert response["RateLimit-Policy"] == '"default";q=600;w=60'
    assert response["RateLimit"] == '"default";r=599;t=30'


def test_over_the_limit_a_key_gets_rate_limited(owner_api, small_limits):
    remaining = [owner_api.get("/v1/servers")["X-RateLimit-Remaining"] for _ in range(5)]
    assert remaining == ["4", "3", "2", "1", "0"]
    response = owner_api.get("/v1/servers")
    assert response.status_code == 429
    error = response.json()["error"]
    assert error["code"] == "rate_limited"
    assert response["Retry-After"] == "30"
    assert error["details"] == {"retry_after": 30}
    assert response["X-RateLimit-Remaining"] == "0"


def test_each_key_has_its_own_budget(owner, account, make_token, client_for, small_limits):
    first, second = client_for(make_token(owner, account)), client_for(make_token(owner, account))
    for _ in range(5):
        first.get("/v1/servers")
    assert first.get("/v1/servers").status_code == 429
    assert second.get("/v1/servers").status_code == 200


def test_an_account_can_have_its_own_limit(owner_api, account, small_limits):
    account.rate_limit_per_minute = 8
    account.save()
    assert owner_api.get("/v1/servers")["X-RateLimit-Limit"] == "8"


def test_refused_requests_count_against_the_client_address(db, client, small_limits):
    codes = [client.get("/v1/servers").status_code for _ in range(4)]
    assert codes == [401, 401, 401, 429]
    response = client.get("/v1/servers", HTTP_AUTHORIZATION="Bearer hms_guess")
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limited"
    assert response["RateLimit-Policy"] == '"anonymous";q=3;w=60'
    # Another address is not affected.
    assert client.get("/v1/servers", REMOTE_ADDR="192.0.2.50").status_code == 401


def test_a_valid_key_still_works_from_an_address_that_failed_a_lot(owner_api, client, small_limits):
    for _ in range(4):
        client.get("/v1/servers")
    assert owner_api.get("/v1/servers").status_code == 200


def test_the_budget_is_whole_again_in_the_next_window(owner_api, small_limits, rate_limit_clock):
    for _ in range(5):
        owner_api.get("/v1/servers")
    assert owner_api.get("/v1/servers").status_code == 429

    rate_limit_clock.advance(30)
    response = owner_api.get("/v1/servers")

    assert response.status_code == 200
    assert response["X-RateLimit-Remaining"] == "4"
    assert response["RateLimit"] == '"default";r=4;t=60'


def test_pruning_deletes_only_the_counters_of_past_windows(tmp_path):
    store = SQLiteCounterStore(str(tmp_path / "rate-limits.sqlite3"))
    store.hit("old", 0)
    store.hit("current", 60)

    assert store.prune(before=60) == 1
    rows = store._connection().execute("SELECT bucket, count FROM counters").fetchall()
    assert rows == [("current", 1)]
    assert store.hit("current", 60) == 2


def test_prune_empties_the_configured_store_of_past_windows(owner_api, rate_limit_clock, settings):
    owner_api.get("/v1/servers")
    rate_limit_clock.advance(60)
    # The SQLite store keeps the row until pruned; Redis expires counters by itself.
    assert rate_limit_prune() == (0 if settings.REDIS_URL else 1)
    assert rate_limit_prune() == 0
