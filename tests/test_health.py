"""``GET /healthz``: 200 while the database (and Redis, when configured) answer, else 503."""

from unittest import mock

import pytest
from django.db import OperationalError
from django.test import Client

from hosting.api.throttling import counter_store

UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"  # nothing listens on port 1


@pytest.fixture
def unreachable_redis(settings):
    """Point REDIS_URL at a closed port and rebuild the (cached) counter store around it."""
    settings.REDIS_URL = UNREACHABLE_REDIS
    counter_store.cache_clear()
    yield
    counter_store.cache_clear()  # the next store is built from the restored settings


def test_it_reports_ok_when_every_dependency_answers(db, settings):
    response = Client().get("/healthz")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    expected_checks = {"database": "ok"}
    if settings.REDIS_URL:
        expected_checks["redis"] = "ok"
    assert response.json() == {"status": "ok", "checks": expected_checks}


def test_it_answers_over_plain_http_for_load_balancers(db, settings):
    settings.SECURE_SSL_REDIRECT = True

    response = Client().get("/healthz", secure=False)

    assert response.status_code == 200


def test_it_needs_no_authentication(db):
    response = Client().get("/healthz", HTTP_AUTHORIZATION="Bearer hms_not-a-real-token")

    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_it_reports_unavailable_when_redis_does_not_answer(db, unreachable_redis):
    assert counter_store().client.connection_pool.connection_kwargs["port"] == 1

    response = Client().get("/healthz")

    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "checks": {"database": "ok", "redis": "unavailable"},
    }


def test_it_reports_unavailable_when_the_database_does_not_answer(db, settings):
    with mock.patch(
        "hosting.health._check_database", side_effect=OperationalError("connection refused")
    ):
        response = Client().get("/healthz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == "unavailable"
    assert body["checks"].get("redis", "ok") == "ok"
    assert "connection refused" not in response.content.decode()


def test_it_reports_unavailable_whatever_the_database_check_raises(db):
    with mock.patch("hosting.health._check_database", side_effect=RuntimeError("boom")):
        response = Client().get("/healthz")

    assert response.status_code == 503
    assert response.json()["checks"]["database"] == "unavailable"


def test_it_refuses_other_methods(db):
    response = Client().post("/healthz")

    assert response.status_code == 405
