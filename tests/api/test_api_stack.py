"""``/v1`` is served by the API's lean middleware stack (hosting/api/stack.py), with the same
answers and headers as through the pages' full stack, and pages keep theirs."""

import io
import json

import pytest
from django.test import Client

from hosting import wsgi
from hosting.api.stack import Dispatcher, is_api_path

SERVERS = "/v1/servers"


def _environ(client: Client, method: str, path: str, body: bytes = b"", **headers) -> dict:
    path, _, query = path.partition("?")
    return client._base_environ(
        PATH_INFO=path,
        QUERY_STRING=query,
        REQUEST_METHOD=method,
        CONTENT_TYPE="application/json",
        CONTENT_LENGTH=str(len(body)),
        **{"wsgi.input": io.BytesIO(body)},
        **headers,
    )


def _through(handler, client, *args, **headers):
    response = handler(_environ(client, *args, **headers))
    shown = {k: v for k, v in response.items() if k not in ("X-Request-Id", "Date")}
    body = json.loads(response.content) if response.content else None
    if body and not body["success"]:
        assert body["error"].pop("request_id") == response["X-Request-Id"]
    return response.status_code, shown, body


def test_the_wsgi_application_sends_v1_to_the_api_stack_and_the_rest_to_the_pages():
    assert isinstance(wsgi.application, Dispatcher)
    assert is_api_path("/v1/servers") and is_api_path("/v1") and is_api_path("/v1/")
    assert not is_api_path("/v1servers") and not is_api_path("/servers") and not is_api_path("/")


@pytest.mark.parametrize(
    ("method", "path", "body", "authorized"),
    [
        ("GET", f"{SERVERS}?per_page=2", b"", True),
        ("GET", SERVERS, b"", False),
        ("GET", "/v1/nothing-here", b"", True),
        ("GET", "/v1", b"", False),
        ("DELETE", SERVERS, b"", True),
        ("POST", SERVERS, b"{not json", True),
        ("POST", SERVERS, b'{"name": ""}', True),
        ("GET", "/v1/servers/srv_nope", b"", True),
    ],
)
def test_an_api_answer_is_the_same_through_either_stack(
    owner, account, make_token, method, path, body, authorized, settings
):
    settings.RATE_LIMIT_PER_MINUTE = 10**6
    client = Client()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {make_token(owner, account)}"} if authorized else {}
    # The same request twice in each: the second is answered as the first (cached key).
    for _ in range(2):
        pages = _through(client.handler.pages, client, method, path, body, **headers)
        api = _through(client.handler.api, client, method, path, body, **headers)
        # Only the rate limit's remaining count moves between the two (one request more).
        for answer in (pages, api):
            for name in ("X-RateLimit-Remaining", "RateLimit"):
                answer[1].pop(name, None)
        # The one header the lean stack changes: the pages' sessions said an answer varies with
        # the Cookie header, which no API answer reads.
        vary = [_tokens(answer[1].pop("Vary", "")) for answer in (pages, api)]
        assert vary[0] - {"Cookie"} == vary[1]
        assert api == pages


def _tokens(vary: str) -> set[str]:
    return {token.strip() for token in vary.split(",") if token.strip()}


def test_an_api_answer_opens_no_session_and_sets_no_cookie(owner_api, client):
    response = owner_api.get(SERVERS)
    assert response.status_code == 200
    assert not response.cookies
    assert "Cookie" not in response.get("Vary", "")
    assert not hasattr(response.wsgi_request, "session")


def test_a_page_keeps_the_full_stack(db, client):
    response = client.get("/login")
    assert response.status_code == 200
    assert hasattr(response.wsgi_request, "session")
    assert "csrftoken" in response.cookies


def test_loading_the_wsgi_application_imports_every_view_before_the_first_request():
    """gunicorn forks its workers from the process that loaded hosting.wsgi (preload_app): the
    URL and view modules are imported there, not by each worker's first request."""
    import subprocess
    import sys

    from django.conf import settings

    probe = (
        "import sys; import hosting.wsgi; "
        "print(all(m in sys.modules for m in ('servers.api.views', 'billing.api.views', "
        f"'{settings.ROOT_URLCONF}', 'support.views')))"
    )
    answer = subprocess.run(  # noqa: S603 (this interpreter, a fixed probe)
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert answer.stdout.strip() == "True", answer.stderr[-2000:]


def test_a_route_that_captures_nothing_is_resolved_once_per_urlconf(
    owner, account, make_token, settings, monkeypatch
):
    """The API's handler keeps a list's route by resolver and path (hosting/api/stack.py); a
    route with an id in its path is resolved each time, and another urlconf resolves anew."""
    from hosting.api import stack

    settings.RATE_LIMIT_PER_MINUTE = 10**6
    monkeypatch.setattr(stack, "_matches", {})
    client = Client()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {make_token(owner, account)}"}

    def match_of(path: str, status: int):
        response = client.handler.api(_environ(client, "GET", path, **headers))
        assert response.status_code == status
        return response.wsgi_request.resolver_match

    first = match_of(SERVERS, 200)
    assert first.url_name == "server-list"
    assert all(match_of(SERVERS, 200) is first for _ in range(2))
    one = match_of(f"{SERVERS}/srv_x", 404)
    assert one.kwargs == {"pk": "srv_x"} and match_of(f"{SERVERS}/srv_x", 404) is not one
    assert list(stack._matches.values()) == [first]
    # Another urlconf (the real routes and a few of the tests'): its resolver is asked anew.
    settings.ROOT_URLCONF = "tests.api.urls"
    other = match_of(SERVERS, 200)
    assert other is not first and match_of(SERVERS, 200) is other
    assert len(stack._matches) == 2
