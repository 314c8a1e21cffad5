"""Hostile input: every request is answered in the envelope, and nothing unstorable is kept.

One test per class of input the fuzzer and the security review found, each at the layer that
now refuses it: the query-parameter parsers (hosting/api/params.py), the JSON parser
(hosting/api/parsers.py), the text rule (hosting/text.py), the router's id pattern, the /v1
catch-all, the per-action filter sets and the strict request bodies.
"""

import importlib
import json
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test import Client, override_settings

from events.models import Event
from hosting.api.parsers import MAX_DEPTH
from servers.models import Bot, Server
from tests.dashboard import field_errors as form_field_errors
from tests.dashboard import signed_in
from tests.envelopes import error_of, field_errors, parameter_errors
from tests.factories import ServerFactory
from tests.servers.helpers import MINECRAFT
from webhooks.models import WebhookEndpoint

BOT = {
    "name": "Helper",
    "region": "eu-central",
    "runtime": "python-3.13",
    "start_command": "python bot.py",
    "token": "MTIzNDU2Nzg5MDEyMzQ1Njc4.Gh7Kx2.abcdefghijklmnop",
}


def post_raw(api, path: str, body: str, method: str = "post"):
    return getattr(api, method)(path, data=body.encode(), content_type="application/json")


# --- 1. Integers in query parameters ---------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("page=18446744073709551616", [("page", "max_value")]),
        ("page=9" * 1, None),
        ("page=" + "9" * 5000, [("page", "max_value")]),
        ("page=1000000001", [("page", "max_value")]),
        ("per_page=18446744073709551616", [("per_page", "max_value")]),
        ("page=-1", [("page", "min_value")]),
        ("page=0", [("page", "min_value")]),
        ("page=%D9%A3", [("page", "invalid")]),  # an Arabic-Indic three
        ("page=+3", [("page", "invalid")]),
        ("page=3_0", [("page", "invalid")]),
        ("page=%203", [("page", "invalid")]),
        ("page=", [("page", "blank")]),
        ("per_page=", [("per_page", "blank")]),
        ("page=1&page=2", [("page", "multiple_values")]),
    ],
)
def test_integer_parameters_are_plain_bounded_digits(owner_api, query, expected):
    response = owner_api.get(f"/v1/servers?{query}")
    if expected is None:
        assert response.status_code == 200, response.content
    else:
        assert parameter_errors(response) == expected


def test_the_largest_page_is_an_empty_page_with_the_true_total(owner_api, account):
    ServerFactory(account=account)
    response = owner_api.get("/v1/servers?page=1000000000&per_page=100")
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["servers"] == []
    assert data["pagination"]["total"] == 1


# --- 2. Comma lists, repeated keys and empty values ------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "ordering=name,",
        "ordering=,name",
        "status=,",
        "status=running,,stopped",
        "status=",
        "status=running&status=",
        "created_before=",
        "search=",
        "game=",
    ],
)
def test_empty_values_and_items_are_refused(owner_api, query):
    name = query.split("=")[0]
    assert parameter_errors(owner_api.get(f"/v1/servers?{query}")) == [(name, "blank")]


@pytest.mark.parametrize(
    "query",
    ["created_after=0001-01-01T00:00:00%2B14:00", "created_before=9999-12-31T23:59:59-14:00"],
)
def test_a_time_beyond_the_utc_range_is_the_first_or_last_moment(owner_api, account, query):
    # Valid ISO 8601 without a UTC equivalent: as a bound it selects what the edge selects.
    ServerFactory.create_batch(2, account=account)
    response = owner_api.get(f"/v1/servers?{query}")
    assert response.status_code == 200
    assert len(response.json()["data"]["servers"]) == 2
    moment = "0001-01-01T00:00:00%2B14:00" if "after" in query else "9999-12-31T23:59:59-14:00"
    other = "created_before" if "after" in query else "created_after"
    assert owner_api.get(f"/v1/servers?{other}={moment}").json()["data"]["servers"] == []


def test_repeated_keys_are_one_list_like_a_comma_list(owner_api, account):
    ServerFactory.create_batch(2, account=account, status="running")
    ServerFactory.create_batch(3, account=account, status="stopped")
    ServerFactory(account=account, status="installing")

    repeated = owner_api.get("/v1/servers?status=running&status=stopped")
    commas = owner_api.get("/v1/servers?status=running,stopped")

    assert repeated.status_code == commas.status_code == 200
    assert repeated.json()["data"]["pagination"]["total"] == 5
    assert repeated.json()["data"] == commas.json()["data"]


def test_repeated_orderings_apply_in_order(owner_api, account):
    ServerFactory(account=account, name="b", status="stopped")
    ServerFactory(account=account, name="a", status="stopped")
    ServerFactory(account=account, name="c", status="running")
    response = owner_api.get("/v1/servers?ordering=status&ordering=-name")
    assert [s["name"] for s in response.json()["data"]["servers"]] == ["c", "b", "a"]


def test_a_single_valued_filter_given_twice_is_refused(owner_api):
    response = owner_api.get("/v1/servers?search=a&search=b")
    assert parameter_errors(response) == [("search", "multiple_values")]


# --- 3. Strings the databases cannot store ----------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('"name": "a\\u0000b"', [("name", "null_characters")]),
        ('"name": "a\\ud800b"', [("name", "invalid_unicode")]),
        ('"variables": {"EULA": true, "MOTD": "\\ud800"}', [("variables.MOTD", "invalid_unicode")]),
        (
            '"variables": {"EULA": true, "MOTD": "a\\u0000"}',
            [("variables.MOTD", "null_characters")],
        ),
        ('"variables": {"EULA": true, "\\udfff": "x"}', [("variables", "invalid_unicode")]),
    ],
)
def test_unstorable_strings_in_a_server_body_are_refused(owner_api, body, expected):
    fields = {key: value for key, value in MINECRAFT.items() if key not in body}
    raw = json.dumps(fields)[:-1] + ", " + body + "}"
    response = post_raw(owner_api, "/v1/servers", raw)
    assert field_errors(response) == expected
    assert not Server.objects.exists()


def test_the_refusal_does_not_echo_the_bad_characters(owner_api):
    raw = json.dumps({**MINECRAFT, "name": "x"})[:-1] + ', "variables": {"\\ud800\\u0000": 1}}'
    response = post_raw(owner_api, "/v1/servers", raw)
    assert response.status_code == 400
    assert b"\\ud800" not in response.content
    assert b"\\u0000" not in response.content.replace(b"(\\\\u0000)", b"")
    response.content.decode("utf-8")  # valid UTF-8 throughout


def test_an_environment_key_with_a_surrogate_is_refused(owner_api):
    raw = json.dumps(BOT)[:-1] + ', "environment": {"\\ud83d": "x"}}'
    response = post_raw(owner_api, "/v1/bots", raw)
    assert field_errors(response) == [("environment", "invalid_unicode")]
    assert not Bot.objects.exists()


def test_a_patch_with_a_surrogate_changes_nothing(owner_api, account):
    server = ServerFactory(account=account, name="Kept")
    raw = '{"name": "\\ud800"}'
    response = post_raw(owner_api, f"/v1/servers/{server.id}", raw, method="patch")
    assert field_errors(response) == [("name", "invalid_unicode")]
    server.refresh_from_db()
    assert server.name == "Kept"


@pytest.mark.parametrize("query", ["search=a%00b", "object_id=srv_%00", "search=%ED%A0%80"])
def test_unstorable_query_values_are_refused(owner_api, query):
    path = "/v1/events" if query.startswith("object_id") else "/v1/servers"
    response = owner_api.get(f"{path}?{query}")
    if query == "search=%ED%A0%80":
        # Not UTF-8: Django decodes it to U+FFFD, which is text like any other.
        assert response.status_code == 200, response.content
    else:
        assert parameter_errors(response) == [(query.split("=")[0], "null_characters")]


@pytest.mark.parametrize(
    "path",
    [
        "/v1/servers/a%00",
        "/v1/servers/srv_%00/actions",
        "/v1/servers/a.b",
        "/v1/bots/%0A",
        "/v1/webhooks/whe_x%00/deliveries",
        "/v1/servers/" + "a" * 65,
    ],
)
def test_a_path_id_that_is_not_an_id_shape_is_a_json_404(owner_api, path):
    error = error_of(owner_api.get(path), 404, "not_found")
    assert "\x00" not in error["message"]


# --- 4. The /v1 fallback runs before CSRF -----------------------------------------------------


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
@pytest.mark.parametrize("path", ["/v1/servers/", "/v1/nope", "/v1", "/v1/servers/a%0Ab"])
def test_unmatched_paths_answer_a_json_404_to_every_method(method, path):
    client = Client(enforce_csrf_checks=True)
    response = getattr(client, method)(path, data="{}", content_type="application/json")
    error_of(response, 404, "not_found")


# --- 5. Out-of-range values inside valid strings ----------------------------------------------


@pytest.fixture
def _local_targets():
    with override_settings(WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE_TARGETS=True):
        yield


@pytest.mark.usefixtures("_local_targets")
@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("http://127.0.0.1:99999/hook", "unsafe_target"),
        ("http://[::1/hook", "invalid"),
        ("http://127.0.0.1:-1/x", "invalid"),
    ],
)
def test_a_webhook_url_with_an_impossible_port_or_host_is_a_field_error(owner_api, url, code):
    response = owner_api.post("/v1/webhooks", {"url": url, "enabled_events": ["*"]}, format="json")
    assert field_errors(response) == [("url", code)]
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.usefixtures("_local_targets")
def test_the_dashboard_form_shows_the_impossible_port_next_to_the_url(owner):
    response = signed_in(owner).post(
        "/settings/webhooks/new",
        {"url": "http://127.0.0.1:99999/hook", "enabled_events": ["*"], "enabled": "on"},
    )
    assert response.status_code == 200
    assert form_field_errors(response, "url") == ["The URL is not valid (check its host and port)."]


# --- 6. Deep and odd JSON ---------------------------------------------------------------------


TOO_DEEP = '{"a":' * (MAX_DEPTH + 2) + "1" + "}" * (MAX_DEPTH + 2)


@pytest.mark.parametrize("raw", ["[" * 100_000, "[" * 100_000 + "]" * 100_000, TOO_DEEP])
def test_deeply_nested_json_is_invalid_json(owner_api, raw):
    error_of(post_raw(owner_api, "/v1/servers", raw), 400, "invalid_json")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_json_numbers_are_invalid_json(owner_api, constant):
    raw = json.dumps(MINECRAFT)[:-1] + f', "resources": {{"memory_mb": {constant}}}}}'
    error_of(post_raw(owner_api, "/v1/servers", raw), 400, "invalid_json")


@pytest.mark.parametrize(
    ("value", "code"), [("18446744073709551616", "out_of_range"), ("1e400", "out_of_range")]
)
def test_numbers_beyond_64_bits_are_refused(owner_api, value, code):
    raw = json.dumps(MINECRAFT)[:-1] + f', "variables": {{"EULA": true, "SEED": {value}}}}}'
    assert field_errors(post_raw(owner_api, "/v1/servers", raw)) == [("variables.SEED", code)]


def test_a_body_within_the_depth_limit_is_read(owner_api):
    nested = '{"a":' * (MAX_DEPTH - 1) + "1" + "}" * (MAX_DEPTH - 1)
    raw = json.dumps(MINECRAFT)[:-1] + f', "variables": {nested}}}'
    response = post_raw(owner_api, "/v1/servers", raw)
    # Read whole, then judged by the game's variables: a field error, not a parse error.
    assert error_of(response, 400, "validation_failed")


# --- 7. A list's filters belong to the list ---------------------------------------------------


def test_list_filters_do_not_narrow_a_detail_lookup(owner_api, account):
    server = ServerFactory(account=account, status="stopped", name="Kept")
    assert owner_api.get(f"/v1/servers/{server.id}?status=running").status_code == 200
    assert owner_api.get(f"/v1/servers/{server.id}?search=nomatch").status_code == 200
    response = owner_api.patch(
        f"/v1/servers/{server.id}?search=x", {"name": "Renamed"}, format="json"
    )
    assert response.status_code == 200, response.content
    assert owner_api.get(f"/v1/servers/{server.id}/actions?status=bogus").status_code == 200


def test_the_schema_puts_a_lists_filters_on_that_list_only(owner_api):
    schema = owner_api.get("/v1/openapi.json").json()

    def names(path: str, method: str = "get") -> set[str]:
        return {p["name"] for p in schema["paths"][path][method].get("parameters", [])}

    assert {"status", "search", "ordering"} <= names("/v1/servers")
    for path in ["/v1/servers/{id}/actions", "/v1/servers/{id}/activity", "/v1/servers/{id}"]:
        assert not names(path) & {"status", "search", "ordering", "game"}, path


# --- 8. The schema says what the API does -----------------------------------------------------


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/v1/servers/{id}", "delete"),
        ("/v1/bots/{id}", "delete"),
        ("/v1/servers/{id}", "patch"),
        ("/v1/bots/{id}", "patch"),
    ],
)
def test_conflicts_of_deletes_and_changes_are_documented(owner_api, path, method):
    responses = owner_api.get("/v1/openapi.json").json()["paths"][path][method]["responses"]
    assert "409" in responses
    assert "invalid_state" in responses["409"]["description"]


def test_the_allow_header_names_only_methods_that_answer(owner_api, account):
    server = ServerFactory(account=account)
    response = owner_api.put(f"/v1/servers/{server.id}", {}, format="json")
    error_of(response, 405, "method_not_allowed")
    allowed = {method.strip() for method in response["Allow"].split(",")}
    assert "OPTIONS" not in allowed
    assert {"GET", "PATCH", "DELETE"} <= allowed
    options = owner_api.options(f"/v1/servers/{server.id}")
    error_of(options, 405, "method_not_allowed")
    assert "OPTIONS" not in options["Allow"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"name": 0}, [("name", "invalid")]),
        ({"name": ["x"]}, [("name", "invalid")]),
        ({"name": True}, [("name", "invalid")]),
    ],
)
def test_a_value_of_another_json_type_is_refused_not_converted(owner_api, account, body, expected):
    response = owner_api.patch("/v1/account", body, format="json")
    assert field_errors(response) == expected
    account.refresh_from_db()
    assert account.name == "Owner's Hosting"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"resources": {"memory_mb": "1024"}}, [("resources.memory_mb", "invalid")]),
        ({"resources": {"memory_mb": 1024.5}}, [("resources.memory_mb", "invalid")]),
        ({"auto_restart": "yes"}, [("auto_restart", "invalid")]),
        ({"auto_restart": 1}, [("auto_restart", "invalid")]),
    ],
)
def test_numbers_and_booleans_must_be_json_numbers_and_booleans(owner_api, body, expected):
    assert field_errors(owner_api.post("/v1/servers", {**MINECRAFT, **body}, format="json")) == (
        expected
    )


def test_a_whole_number_written_with_a_fraction_is_an_integer(owner_api):
    response = owner_api.post(
        "/v1/servers", {**MINECRAFT, "resources": {"memory_mb": 1024.0}}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["data"]["server"]["resources"]["memory_mb"] == 1024


def test_a_string_longer_than_its_limit_is_refused_before_trimming(owner_api, account):
    response = owner_api.patch("/v1/account", {"name": " " + "x" * 150}, format="json")
    assert field_errors(response) == [("name", "max_length")]


def test_list_items_of_another_type_are_named(owner_api):
    response = owner_api.post(
        "/v1/api-keys", {"name": "k", "scopes": ["servers:read", 5]}, format="json"
    )
    assert field_errors(response) == [("scopes.1", "invalid")]


# --- Reads survive a row stored before these rules -------------------------------------------


@pytest.mark.skipif(connection.vendor != "sqlite", reason="PostgreSQL never stored such text")
def test_a_surrogate_stored_before_the_rules_no_longer_breaks_reads(owner_api, account):
    server = ServerFactory(account=account)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE servers_server SET variables = %s WHERE id = %s",
            ['{"MOTD": "bad \\ud800 text"}', server.id],
        )
    response = owner_api.get(f"/v1/servers/{server.id}")
    assert response.status_code == 200, response.content
    response.content.decode("utf-8")


@pytest.mark.skipif(connection.vendor != "sqlite", reason="PostgreSQL never stored such text")
def test_the_dashboard_page_of_such_a_server_still_opens(owner, account):
    server = ServerFactory(account=account)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE servers_server SET variables = %s WHERE id = %s",
            ['{"MOTD": "bad \\udfff text"}', server.id],
        )
    response = signed_in(owner).get(f"/servers/{server.id}")
    assert response.status_code == 200
    assert "bad \ufffd text" in response.content.decode()


@pytest.mark.skipif(connection.vendor != "sqlite", reason="PostgreSQL never stored such text")
def test_the_migration_repairs_what_sqlite_kept(account):
    from django.db.migrations.executor import MigrationExecutor

    server = ServerFactory(account=account)
    event = Event.objects.create(account=account, type="server.updated", object_type="server")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE servers_server SET variables = %s WHERE id = %s",
            ['{"MOTD": "a\\ud800b", "ok": "\\ud83d\\ude00", "\\udc00": 1}', server.id],
        )
        cursor.execute(
            "UPDATE events_event SET data = %s WHERE id = %s",
            ['{"object": {"name": "x\\u0000y"}, "previous_attributes": {}}', event.id],
        )
    before = MigrationExecutor(connection).loader.project_state(
        [("servers", "0007_instance_counts"), ("events", "0002_lifecycle")]
    )
    editor = SimpleNamespace(connection=connection)
    importlib.import_module("servers.migrations.0008_storable_text").repair(before.apps, editor)
    importlib.import_module("events.migrations.0003_storable_text").repair(before.apps, editor)

    with connection.cursor() as cursor:
        cursor.execute("SELECT variables FROM servers_server WHERE id = %s", [server.id])
        variables = json.loads(cursor.fetchone()[0])
        cursor.execute("SELECT data FROM events_event WHERE id = %s", [event.id])
        data = json.loads(cursor.fetchone()[0])
    assert variables == {"MOTD": "a\ufffdb", "ok": "\U0001f600", "\ufffd": 1}
    assert data["object"]["name"] == "x\ufffdy"


# --- Races ------------------------------------------------------------------------------------


def test_an_object_deleted_while_a_request_changes_it_is_a_404(owner_api, owner, account):
    """The view finds the endpoint, a concurrent DELETE removes it, the service's locked read
    finds nothing: that is the object not existing (404), not a server error."""
    from unittest import mock

    from accounts.actors import Actor
    from webhooks.api import views
    from webhooks.services import endpoint_create

    with override_settings(WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE_TARGETS=True):
        endpoint, _ = endpoint_create(
            account=account,
            url="http://127.0.0.1:9/x",
            enabled_events=["*"],
            actor=Actor(user=owner),
        )
        found = views.WebhookEndpointViewSet.get_object

        def found_then_deleted(view):
            instance = found(view)
            WebhookEndpoint.objects.filter(pk=instance.pk).delete()
            return instance

        with mock.patch.object(views.WebhookEndpointViewSet, "get_object", found_then_deleted):
            response = owner_api.patch(
                f"/v1/webhooks/{endpoint.id}", {"description": "x"}, format="json"
            )
    error_of(response, 404, "not_found")


@pytest.mark.parametrize(
    "path",
    ["/servers/a%00", "/bots/srv_%00/edit", "/settings/webhooks/a%00", "/settings/team/a.b/role"],
)
def test_a_dashboard_path_with_a_malformed_id_is_the_not_found_page(owner, path):
    response = signed_in(owner).get(path)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


@pytest.mark.parametrize(
    "path",
    [
        "/admin/servers/server/a%00/change/",
        "/admin/accounts/account/a%00/change/",
        "/admin/webhooks/webhookendpoint/a%00/history/",
    ],
)
def test_an_admin_path_with_a_nul_is_not_found(staff_client, path):
    assert staff_client.get(path).status_code == 404


@pytest.mark.parametrize(
    "path", ["/admin/servers/server/?q=a%00", "/activity?type=a%00", "/servers?x%00=1"]
)
def test_a_dashboard_query_with_a_nul_is_a_bad_request(staff_client, owner, path):
    client = staff_client if path.startswith("/admin") else signed_in(owner)
    assert client.get(path).status_code == 400
