import json

import pytest

from tests.envelopes import error_body

pytestmark = pytest.mark.urls("tests.api.urls")


@pytest.fixture
def api(owner_api):
    return owner_api


def test_a_success_is_wrapped_in_the_envelope(api):
    response = api.post("/v1/_test/echo", {"name": "x"}, format="json")
    assert response.status_code == 201
    assert response.json() == {"success": True, "data": {"echo": {"name": "x"}}}


def test_malformed_json_gets_invalid_json(api):
    response = api.generic("POST", "/v1/_test/echo", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert error_body(response)["code"] == "invalid_json"


def test_another_media_type_gets_unsupported_media_type(api):
    response = api.generic("POST", "/v1/_test/echo", "name=x", content_type="text/plain")
    assert response.status_code == 415
    assert error_body(response)["code"] == "unsupported_media_type"


def test_an_unknown_path_under_v1_gets_a_json_not_found(api):
    for path in ("/v1/nothing-here", "/v1/servers/", "/v1", "/v1/servers/srv_x/extra"):
        response = api.get(path)
        assert response.status_code == 404, path
        assert error_body(response)["code"] == "not_found"


def test_paths_answer_without_a_trailing_slash_redirect(api):
    assert api.get("/v1/servers").status_code == 200


def test_a_method_the_endpoint_lacks_gets_method_not_allowed(api):
    for method in ("put", "patch", "delete", "options"):
        response = getattr(api, method)("/v1/servers")
        assert response.status_code == 405, method
        assert error_body(response)["code"] == "method_not_allowed"


def test_an_error_inside_a_view_is_an_internal_error_without_details(api, caplog):
    api.raise_request_exception = False
    response = api.get("/v1/_test/broken")
    assert response.status_code == 500
    error = error_body(response)
    assert error["code"] == "internal_error"
    assert "secret-database-password" not in response.content.decode()
    assert any(record.levelname == "ERROR" for record in caplog.records)


def test_an_error_outside_drf_is_an_internal_error_too(api):
    api.raise_request_exception = False
    response = api.get("/v1/_test/plain-broken")
    assert response.status_code == 500
    assert error_body(response)["code"] == "internal_error"


def test_a_view_that_declares_no_scopes_fails_closed(api):
    api.raise_request_exception = False
    response = api.get("/v1/_test/undeclared")
    assert response.status_code == 500
    assert error_body(response)["code"] == "internal_error"


def test_every_response_carries_a_request_id(api, client):
    ok = api.get("/v1/servers")
    assert ok["X-Request-Id"].startswith("req_")
    assert len(ok["X-Request-Id"]) == 4 + 24
    assert client.get("/healthz")["X-Request-Id"].startswith("req_")


def test_a_safe_incoming_request_id_is_echoed(api):
    response = api.get("/v1/nowhere", HTTP_X_REQUEST_ID="trace-42.abc")
    assert response["X-Request-Id"] == "trace-42.abc"
    assert response.json()["error"]["request_id"] == "trace-42.abc"


@pytest.mark.parametrize("incoming", ["x" * 65, "bad id", "<script>", ""])
def test_an_unsafe_incoming_request_id_is_replaced(api, incoming):
    response = api.get("/v1/servers", HTTP_X_REQUEST_ID=incoming)
    assert response["X-Request-Id"].startswith("req_")


def test_the_api_answers_json_whatever_accept_says(api):
    response = api.get("/v1/servers", HTTP_ACCEPT="text/html")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    json.loads(response.content)
