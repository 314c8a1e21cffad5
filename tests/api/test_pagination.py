import pytest

from tests.factories import ServerFactory


@pytest.fixture
def thirty_servers(account):
    return ServerFactory.create_batch(30, account=account)


def pagination_of(response) -> dict:
    assert response.status_code == 200, response.content
    return response.json()["data"]["pagination"]


def test_the_defaults_are_page_1_of_25(owner_api, thirty_servers):
    response = owner_api.get("/v1/servers")
    assert pagination_of(response) == {"page": 1, "per_page": 25, "total": 30, "total_pages": 2}
    assert len(response.json()["data"]["servers"]) == 25


def test_the_last_page_holds_the_rest(owner_api, thirty_servers):
    response = owner_api.get("/v1/servers?page=2")
    assert pagination_of(response)["page"] == 2
    assert len(response.json()["data"]["servers"]) == 5


def test_pages_neither_skip_nor_repeat(owner_api, thirty_servers):
    # All 30 share one created_at: the id tie-breaker must keep the order total.
    seen = []
    for page in range(1, 5):
        seen += [
            s["id"]
            for s in owner_api.get(f"/v1/servers?per_page=8&page={page}").json()["data"]["servers"]
        ]
    assert sorted(seen) == sorted(s.id for s in thirty_servers)
    assert len(seen) == len(set(seen))


def test_a_page_past_the_end_is_empty_with_the_true_total(owner_api, thirty_servers):
    response = owner_api.get("/v1/servers?page=9")
    assert response.json()["data"]["servers"] == []
    assert pagination_of(response) == {"page": 9, "per_page": 25, "total": 30, "total_pages": 2}


def test_an_empty_list_has_one_empty_page(owner_api):
    response = owner_api.get("/v1/servers")
    assert pagination_of(response) == {"page": 1, "per_page": 25, "total": 0, "total_pages": 1}


def test_per_page_of_100_is_allowed(owner_api, thirty_servers):
    assert pagination_of(owner_api.get("/v1/servers?per_page=100"))["per_page"] == 100


@pytest.mark.parametrize(
    ("query", "name", "code"),
    [
        ("per_page=101", "per_page", "max_value"),
        ("per_page=0", "per_page", "min_value"),
        ("per_page=-3", "per_page", "min_value"),
        ("per_page=ten", "per_page", "invalid"),
        ("page=0", "page", "min_value"),
        ("page=abc", "page", "invalid"),
        ("page=1.5", "page", "invalid"),
    ],
)
def test_bad_page_parameters_get_invalid_parameter(owner_api, query, name, code):
    response = owner_api.get(f"/v1/servers?{query}")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_parameter"
    assert f"'{name}'" in error["message"]
    assert error["details"]["parameters"] == [
        {"name": name, "code": code, "message": error["message"]}
    ]


def test_the_link_header_names_first_prev_next_and_last(owner_api, thirty_servers):
    response = owner_api.get("/v1/servers?per_page=10&page=2&status=running")
    links = dict(
        (part.split('rel="')[1].rstrip('"'), part.split(">")[0].lstrip("<"))
        for part in response["Link"].split(", ")
    )
    assert set(links) == {"first", "prev", "next", "last"}
    assert links["first"] == "http://testserver/v1/servers?page=1&per_page=10&status=running"
    assert links["prev"].endswith("page=1&per_page=10&status=running")
    assert links["next"].endswith("page=3&per_page=10&status=running")
    assert links["last"].endswith("page=3&per_page=10&status=running")


def test_the_links_follow_each_requests_host_scheme_and_path(owner_api, thirty_servers, settings):
    """The links' address is kept per host, scheme and path (hosting/api/pagination.py): each
    request still gets its own, and a host ALLOWED_HOSTS refuses is refused."""
    settings.ALLOWED_HOSTS = ["testserver", "api.example.com"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

    def first(path, **headers):
        response = owner_api.get(path, **headers)
        return response.status_code, response.get("Link", "").split(">")[0].lstrip("<")

    for _ in range(2):  # the second time from what was kept
        assert first("/v1/servers?per_page=10") == (
            200,
            "http://testserver/v1/servers?page=1&per_page=10",
        )
        assert first("/v1/servers?per_page=10", HTTP_HOST="api.example.com") == (
            200,
            "http://api.example.com/v1/servers?page=1&per_page=10",
        )
        assert first(
            "/v1/servers?per_page=10", HTTP_HOST="api.example.com", HTTP_X_FORWARDED_PROTO="https"
        ) == (200, "https://api.example.com/v1/servers?page=1&per_page=10")
        assert first("/v1/bots?per_page=10", HTTP_HOST="api.example.com")[1].startswith(
            "http://api.example.com/v1/bots?"
        )
        assert first("/v1/servers?per_page=10", HTTP_HOST="evil.example.net")[0] == 400


def test_the_first_page_has_no_prev_and_the_last_no_next(owner_api, thirty_servers):
    first = owner_api.get("/v1/servers?per_page=30")["Link"]
    assert 'rel="prev"' not in first
    assert 'rel="next"' not in first
    assert 'rel="first"' in first
    assert 'rel="last"' in first
