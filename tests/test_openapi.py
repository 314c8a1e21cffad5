"""The OpenAPI document and the docs pages, and real responses validated against the document."""

import copy
import re
from datetime import datetime

import pytest
from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry
from referencing.jsonschema import DRAFT202012
from rest_framework.test import APIClient

from tests.factories import ServerFactory

SCHEMA_URI = "https://hosting.test/v1/openapi.json"
UTC_SECONDS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")

# Without rfc3339-validator installed jsonschema skips "date-time"; check the contract's format.
format_checker = FormatChecker()


@format_checker.checks("date-time", raises=ValueError)
def _is_contract_datetime(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not UTC_SECONDS.match(value):
        return False
    datetime.fromisoformat(value)
    return True


def _pointer(*parts: str) -> str:
    return "#/" + "/".join(part.replace("~", "~0").replace("/", "~1") for part in parts)


def validator_for(document: dict, *parts: str) -> Draft202012Validator:
    """A validator for the schema at ``parts`` inside ``document``, with every $ref resolvable."""
    registry = Registry().with_resource(SCHEMA_URI, DRAFT202012.create_resource(document))
    return Draft202012Validator(
        {"$ref": SCHEMA_URI + _pointer(*parts)},
        registry=registry,
        format_checker=format_checker,
    )


def response_schema_validator(document: dict, path: str, status: str) -> Draft202012Validator:
    return validator_for(
        document, "paths", path, "get", "responses", status, "content", "application/json", "schema"
    )


@pytest.fixture
def openapi(db) -> dict:
    response = APIClient().get("/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


# --- The document -----------------------------------------------------------------------------


def test_it_serves_the_openapi_document_without_a_key(db):
    response = APIClient().get("/v1/openapi.json")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/")
    assert response.json()["openapi"] == "3.1.0"


def test_it_documents_bearer_authentication(openapi):
    scheme = openapi["components"]["securitySchemes"]["BearerAuth"]

    assert scheme["type"] == "http"
    assert scheme["scheme"] == "bearer"


def test_it_documents_the_servers_and_games_endpoints(openapi):
    assert {"/v1/servers", "/v1/servers/{id}", "/v1/games"} <= set(openapi["paths"])
    for path in ("/v1/servers", "/v1/servers/{id}", "/v1/games"):
        assert openapi["paths"][path]["get"]["security"] == [{"BearerAuth": []}]


def test_it_documents_the_server_list_as_a_success_envelope(openapi):
    schema = openapi["paths"]["/v1/servers"]["get"]["responses"]["200"]["content"][
        "application/json"
    ]["schema"]

    assert schema["type"] == "object"
    assert set(schema["required"]) == {"success", "data"}
    assert schema["properties"]["success"] == {"type": "boolean", "const": True}
    data_ref = schema["properties"]["data"]["$ref"]
    data = openapi["components"]["schemas"][data_ref.removeprefix("#/components/schemas/")]
    assert set(data["required"]) == {"servers", "pagination"}
    assert data["properties"]["servers"]["type"] == "array"
    assert data["properties"]["servers"]["items"] == {"$ref": "#/components/schemas/Server"}
    pagination = data["properties"]["pagination"]
    assert {"page", "per_page", "total", "total_pages"} <= set(pagination["required"])


@pytest.mark.parametrize("status", ["400", "401", "403", "429"])
def test_it_documents_error_responses_of_the_server_list_with_the_error_schema(openapi, status):
    response = openapi["paths"]["/v1/servers"]["get"]["responses"][status]

    assert response["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorEnvelope"
    }


def test_it_documents_not_found_on_the_server_detail(openapi):
    response = openapi["paths"]["/v1/servers/{id}"]["get"]["responses"]["404"]

    assert response["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorEnvelope"
    }


def test_it_defines_the_error_envelope_and_its_detail_as_separate_components(openapi):
    schemas = openapi["components"]["schemas"]
    envelope = schemas["ErrorEnvelope"]

    assert set(envelope["required"]) == {"success", "error"}
    assert envelope["properties"]["success"]["const"] is False
    assert envelope["properties"]["error"] == {"$ref": "#/components/schemas/Error"}
    assert {"code", "message", "request_id"} <= set(schemas["Error"]["required"])
    assert schemas["Error"]["properties"]["details"] == {
        "$ref": "#/components/schemas/ErrorDetails"
    }
    assert schemas["ErrorDetails"]["properties"]["fields"]["items"] == {
        "$ref": "#/components/schemas/FieldProblem"
    }


def test_the_documented_examples_match_their_own_schemas(openapi):
    for path, operations in openapi["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                media = response.get("content", {}).get("application/json")
                if not media:
                    continue
                validator = validator_for(
                    openapi,
                    "paths",
                    path,
                    method,
                    "responses",
                    status,
                    "content",
                    "application/json",
                    "schema",
                )
                examples = [e["value"] for e in media.get("examples", {}).values()]
                if "example" in media:
                    examples.append(media["example"])
                for example in examples:
                    errors = [e.message for e in validator.iter_errors(example)]
                    assert errors == [], (path, method, status)


# --- Real responses against the document ------------------------------------------------------


def test_the_server_list_response_matches_the_documented_schema(
    openapi, account, owner, make_token, client_for
):
    ServerFactory.create_batch(3, account=account)

    response = client_for(make_token(owner, account)).get("/v1/servers")

    assert response.status_code == 200
    body = response.json()
    assert len(body["data"]["servers"]) == 3
    validator = response_schema_validator(openapi, "/v1/servers", "200")
    assert [error.message for error in validator.iter_errors(body)] == []


def test_the_server_detail_response_matches_the_documented_schema(
    openapi, account, owner, make_token, client_for
):
    server = ServerFactory(account=account)

    response = client_for(make_token(owner, account)).get(f"/v1/servers/{server.id}")

    assert response.status_code == 200
    body = response.json()
    assert body["data"]["server"]["id"] == server.id
    validator = response_schema_validator(openapi, "/v1/servers/{id}", "200")
    assert [error.message for error in validator.iter_errors(body)] == []


def test_the_game_list_response_matches_the_documented_schema(
    openapi, account, owner, make_token, client_for
):
    response = client_for(make_token(owner, account)).get("/v1/games")

    assert response.status_code == 200
    assert response.json()["data"]["games"]
    validator = response_schema_validator(openapi, "/v1/games", "200")
    assert [error.message for error in validator.iter_errors(response.json())] == []


def test_an_unauthenticated_error_body_matches_the_error_component(openapi):
    response = APIClient().get("/v1/servers")

    assert response.status_code == 401
    body = response.json()
    assert body["error"]["code"] == "authentication_required"
    validator = validator_for(openapi, "components", "schemas", "ErrorEnvelope")
    assert [error.message for error in validator.iter_errors(body)] == []
    # The operation's documented 401 points at the same component.
    documented = response_schema_validator(openapi, "/v1/servers", "401")
    assert [error.message for error in documented.iter_errors(body)] == []


def test_a_not_found_error_body_matches_the_documented_404(openapi, owner_api):
    response = owner_api.get("/v1/servers/srv_doesnotexist000000000000")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    validator = response_schema_validator(openapi, "/v1/servers/{id}", "404")
    assert [error.message for error in validator.iter_errors(response.json())] == []


def test_the_validator_rejects_a_server_without_created_at(
    openapi, account, owner, make_token, client_for
):
    ServerFactory(account=account)
    body = client_for(make_token(owner, account)).get("/v1/servers").json()
    validator = response_schema_validator(openapi, "/v1/servers", "200")
    assert validator.is_valid(body)

    broken = copy.deepcopy(body)
    del broken["data"]["servers"][0]["created_at"]

    assert not validator.is_valid(broken)
    assert any(
        "'created_at' is a required property" in e.message for e in validator.iter_errors(broken)
    )


@pytest.mark.parametrize(
    ("mutate", "why"),
    [
        (lambda body: body.pop("success"), "success missing"),
        (lambda body: body.update(success=False), "success false"),
        (lambda body: body["data"].pop("pagination"), "pagination missing"),
        (lambda body: body["data"]["servers"][0].update(status="exploded"), "unknown status"),
        (
            lambda body: body["data"]["servers"][0].update(created_at="2026-11-21 15:04:05"),
            "created_at not ISO 8601 with Z",
        ),
        (lambda body: body["data"]["pagination"].update(total="1"), "total not an integer"),
    ],
)
def test_the_validator_rejects_a_broken_server_list(
    openapi, account, owner, make_token, client_for, mutate, why
):
    ServerFactory(account=account)
    body = client_for(make_token(owner, account)).get("/v1/servers").json()
    validator = response_schema_validator(openapi, "/v1/servers", "200")
    assert validator.is_valid(body)

    mutate(body)

    assert not validator.is_valid(body), why


def test_the_validator_rejects_an_error_body_without_a_code(openapi):
    body = APIClient().get("/v1/servers").json()
    validator = validator_for(openapi, "components", "schemas", "ErrorEnvelope")
    assert validator.is_valid(body)

    del body["error"]["code"]

    assert not validator.is_valid(body)


# --- Docs pages --------------------------------------------------------------------------------

ASSET = re.compile(r"""<(?:script|link)\b[^>]*?\b(?:src|href)=["']([^"']+)["']""", re.IGNORECASE)


@pytest.mark.parametrize("url", ["/v1/docs", "/v1/redoc"])
def test_the_docs_pages_answer_html_without_a_key(db, url):
    response = APIClient().get(url)

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert "/v1/openapi.json" in html
    # Every address the page names, not any text: a random nonce may well spell "cdn".
    addresses = ASSET.findall(html) + re.findall(r"""https?://[^\s"'<>]+""", html)
    for needle in ("cdn", "jsdelivr", "unpkg"):
        assert not [address for address in addresses if needle in address.lower()], needle


@pytest.mark.parametrize("url", ["/v1/docs", "/v1/redoc"])
def test_the_docs_pages_load_their_scripts_from_local_static_files(db, url):
    html = APIClient().get(url).content.decode()

    scripts = re.findall(r"""<script\b[^>]*\bsrc=["']([^"']+)["']""", html, re.IGNORECASE)

    assert scripts
    assert all(src.startswith("/static/") for src in scripts), scripts


@pytest.mark.parametrize("url", ["/v1/docs", "/v1/redoc"])
def test_the_docs_pages_link_no_third_party_assets(db, url):
    html = APIClient().get(url).content.decode()

    assets = ASSET.findall(html)

    assert assets
    assert all(asset.startswith("/static/") for asset in assets), assets


def test_the_schema_generates_without_warnings_and_validates(db, tmp_path):
    from django.core.management import call_command

    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "openapi.json")
    )
    assert (tmp_path / "openapi.json").stat().st_size > 10_000


# --- What generated clients need (openapi-python-client, openapi-typescript) ----------------


def test_the_document_passes_the_openapi_spec_validator(openapi):
    from openapi_spec_validator import validate

    validate(openapi)


def request_components(openapi) -> dict[str, dict]:
    schemas = openapi["components"]["schemas"]
    return {name: schema for name, schema in schemas.items() if name.endswith("Request")}


def test_request_bodies_refuse_undeclared_keys_and_carry_no_defaults(openapi):
    components = request_components(openapi)
    assert "ServerCreateRequest" in components
    for name, schema in components.items():
        assert schema["additionalProperties"] is False, name
        for field, prop in schema.get("properties", {}).items():
            # A TypeScript client makes a property with a default required; the default is
            # said in the description instead.
            assert "default" not in prop, f"{name}.{field}"
    auto_restart = components["ServerCreateRequest"]["properties"]["auto_restart"]
    assert "Default: `true`." in auto_restart["description"]
    assert "auto_restart" not in components["ServerCreateRequest"]["required"]


def test_201_and_202_answers_declare_their_location(openapi):
    for path, method in [
        ("/v1/servers", "post"),
        ("/v1/servers/{id}/actions", "post"),
        ("/v1/servers/{id}", "delete"),
        ("/v1/servers/{id}/databases", "post"),
        ("/v1/admin/database-hosts", "post"),
    ]:
        responses = openapi["paths"][path][method]["responses"]
        status = next(code for code in ("201", "202") if code in responses)
        assert responses[status]["headers"]["Location"]["schema"] == {
            "type": "string",
            "format": "uri",
        }


def test_objects_with_a_fixed_shape_are_typed(openapi):
    schemas = openapi["components"]["schemas"]
    event = schemas["Event"]["properties"]
    assert event["data"]["allOf"] == [{"$ref": "#/components/schemas/EventData"}]
    assert set(schemas["EventData"]["required"]) == {"object", "previous_attributes"}
    assert event["actor"]["allOf"] == [{"$ref": "#/components/schemas/EventActor"}]
    assert schemas["Action"]["properties"]["target"]["allOf"] == [
        {"$ref": "#/components/schemas/ActionTarget"}
    ]
    assert schemas["ActionTarget"]["properties"]["type"] == {
        "$ref": "#/components/schemas/ActionTargetType"
    }
    variables = schemas["ServerDetail"]["properties"]["variables"]
    assert variables["additionalProperties"] == {"type": ["string", "integer", "boolean"]}
    details = schemas["ErrorDetails"]["properties"]
    assert {"fields", "parameters", "required_scopes", "retry_after", "action_id"} <= set(details)


def test_query_parameters_may_not_be_empty(openapi):
    parameters = {
        p["name"]: p["schema"] for p in openapi["paths"]["/v1/servers"]["get"]["parameters"]
    }
    assert parameters["search"]["minLength"] == 1
    assert parameters["status"]["minItems"] == 1
    assert parameters["page"]["maximum"] == 1_000_000_000


def test_trimmed_text_fields_need_a_character_that_is_not_white_space(openapi):
    name = openapi["components"]["schemas"]["ServerCreateRequest"]["properties"]["name"]
    pattern = re.compile(name["pattern"])
    assert pattern.search(" a ")
    for blank in [" ", "\t\n", "\x1c", "\u3000"]:
        assert not pattern.search(blank) and not blank.strip()


def test_creates_link_to_the_operations_on_what_they_created(openapi):
    links = openapi["paths"]["/v1/servers"]["post"]["responses"]["201"]["links"]
    assert links["servers_retrieve"] == {
        "operationId": "servers_retrieve",
        "parameters": {"id": "$response.body#/data/server/id"},
    }
    assert {"servers_partial_update", "servers_destroy", "servers_actions_create"} <= set(links)
    # What belongs to a server takes its id as {id} too: the databases, as the schedules.
    assert {"servers_schedules_create", "servers_databases_create"} <= set(links)
    hosts = openapi["paths"]["/v1/admin/database-hosts"]["post"]["responses"]["201"]["links"]
    assert set(hosts) == {
        "admin_database_hosts_retrieve",
        "admin_database_hosts_partial_update",
        "admin_database_hosts_destroy",
    }
    # POST /v1/account/members answers the invitation it sends: its links go there.
    members = openapi["paths"]["/v1/account/members"]["post"]["responses"]["201"]["links"]
    assert set(members) == {"account_invitations_retrieve", "account_invitations_destroy"}
