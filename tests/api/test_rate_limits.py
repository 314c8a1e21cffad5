import time

import pytest


@pytest.fixture
def small_limits(settings):
    settings.RATE_LIMIT_PER_MINUTE = 5
    settings.RATE_LIMIT_ANON_PER_MINUTE = 3


@pytest.fixture(autouse=True)
def _not_at_a_window_edge():
    """A fixed window resets on the minute: don't start a counting test right before it."""
    if time.time() % 60 > 57:
        time.sleep(60 - time.time() % 60 + 0.1)


def test_an_authenticated_response_carries_the_limit_headers(owner_api):
    response = owner_api.get("/v1/servers")
    assert response["X-RateLimit-Limit"] == "600"
    assert response["X-RateLimit-Remaining"] == "599"
    reset = int(response["X-RateLimit-Reset"])
    assert 0 < reset - time.time() <= 60
    assert reset % 60 == 0
    assert response["RateLimit-Policy"] == '"default";q=600;w=60'
    seconds = int(response["RateLimit"].rsplit("t=", 1)[1])
    assert response["RateLimit"] == f'"default";r=599;t={seconds}'
    assert 1 <= seconds <= 60


def test_over_the_limit_a_key_gets_rate_limited(owner_api, small_limits):
    remaining = [owner_api.get("/v1/servers")["X-RateLimit-Remaining"] for _ in range(5)]
    assert remaining == ["4", "3", "2", "1", "0"]
    response = owner_api.get("/v1/servers")
    assert response.status_code == 429
    error = response.json()["error"]
    assert error["code"] == "rate_limited"
    retry_after = int(response["Retry-After"])
    assert 1 <= retry_after <= 60
    assert error["details"] == {"retry_after": retry_after}
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
