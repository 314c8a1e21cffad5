"""The schema as generated clients (openapi-python-client, openapi-typescript + openapi-fetch)
read it: every operation callable without configuring the generator (issue 28).
scripts/check_openapi.py generates both clients and type-checks a program against each; these
tests pin the rules of the document that make that work."""

import pytest
from rest_framework.test import APIClient

from tests.billing.api.conftest import books_of

JSON = "application/json"
# What openapi-python-client reads without configuration: JSON, text (str), octet-stream (bytes).
READABLE = ("text/", "application/octet-stream")


@pytest.fixture
def books(account):
    return books_of(account)


@pytest.fixture
def openapi(db) -> dict:
    response = APIClient().get("/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


def operations(document: dict):
    for path, item in document["paths"].items():
        for method, operation in item.items():
            yield path, method, operation


def test_no_operation_lists_the_414_of_the_http_server_and_the_document_says_it_once(openapi):
    listing = [
        operation["operationId"]
        for _, _, operation in operations(openapi)
        if "414" in operation["responses"]
    ]

    assert listing == []
    assert "414 URI Too Long" in openapi["info"]["description"]
    assert "UriTooLong" in openapi["components"]["responses"]


def test_every_response_has_a_body_or_is_a_204(openapi):
    """A response without content in a union makes a generated client's return type ``Any``."""
    bodiless = [
        (operation["operationId"], status)
        for _, _, operation in operations(openapi)
        for status, response in operation["responses"].items()
        if not response.get("content") and status != "204"
    ]

    assert bodiless == []


def test_no_success_response_mixes_json_with_a_download(openapi):
    mixed = [
        (operation["operationId"], status, sorted(response["content"]))
        for _, _, operation in operations(openapi)
        for status, response in operation["responses"].items()
        if status.startswith("2")
        and JSON in response.get("content", {})
        and len(response["content"]) > 1
    ]

    assert mixed == []


def test_every_download_has_a_media_type_the_generated_python_client_reads(openapi):
    unreadable = [
        (operation["operationId"], sorted(response["content"]))
        for _, _, operation in operations(openapi)
        for status, response in operation["responses"].items()
        if status.startswith("2")
        and JSON not in response.get("content", {})
        and response.get("content")
        and not any(media.startswith(READABLE) for media in response["content"])
    ]

    assert unreadable == []


def test_each_report_has_a_csv_download_operation_and_answers_json_only(openapi):
    paths = openapi["paths"]
    reports = [path for path in paths if "/reports/" in path and not path.endswith(".csv")]

    assert len(reports) == 9
    for path in reports:
        report, download = paths[path]["get"], paths[f"{path}.csv"]["get"]
        assert list(report["responses"]["200"]["content"]) == [JSON]
        assert list(download["responses"]["200"]["content"]) == ["text/csv"]
        assert download["operationId"] == report["operationId"].removesuffix("_retrieve") + "_csv"
        for operation in (report, download):
            assert "format" not in [each["name"] for each in operation["parameters"]]
        assert [each["name"] for each in report["parameters"]] == [
            each["name"] for each in download["parameters"]
        ]


def test_metric_points_are_typed_time_value_pairs(openapi):
    point = openapi["components"]["schemas"]["Series"]["properties"]["points"]["items"]

    assert point["prefixItems"][0] == {
        "type": "string",
        "format": "date-time",
        "description": "The bucket's start (UTC).",
    }
    assert point["prefixItems"][1]["type"] == "number"
    assert point["minItems"] == point["maxItems"] == 2


def test_multipart_file_parts_are_declared_binary(openapi):
    schemas = openapi["components"]["schemas"]
    parts = []
    for _, _, operation in operations(openapi):
        media = operation.get("requestBody", {}).get("content", {}).get("multipart/form-data")
        if not media:
            continue
        schema = media["schema"]
        if "$ref" in schema:
            schema = schemas[schema["$ref"].rsplit("/", 1)[-1]]
        for name, prop in schema["properties"].items():
            part = prop.get("items", {}) if prop.get("type") == "array" else prop
            if part.get("format") == "binary":
                parts.append((operation["operationId"], name))
                assert part["contentMediaType"] == "application/octet-stream"
                assert media["encoding"][name] == {"contentType": "application/octet-stream"}

    assert ("bots_source_create", "file") in parts
    assert ("tickets_attachments_create", "file") in parts


# --- The downloads answer as declared -------------------------------------------------------


@pytest.mark.django_db
def test_a_report_csv_download_answers_the_csv(owner_api):
    response = owner_api.get(
        "/v1/analytics/reports/usage.csv?start_month=2026-01&end_month=2026-02"
    )

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response.content.decode().startswith("month,")


@pytest.mark.django_db
def test_a_report_csv_download_refuses_bad_parameters_in_the_envelope(owner_api):
    response = owner_api.get("/v1/analytics/reports/usage.csv?start_month=2026-13")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_parameter"


@pytest.mark.django_db
def test_a_report_csv_download_needs_the_reports_scopes(account, owner, make_token, client_for):
    api = client_for(make_token(owner, account, ["analytics:read"]))

    response = api.get("/v1/analytics/reports/spend.csv")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_scope"


def test_a_staff_report_csv_download_needs_a_staff_key(owner_api):
    response = owner_api.get("/v1/admin/reports/mrr.csv")

    assert response.status_code == 403


@pytest.mark.parametrize(
    ("accept", "media"),
    [
        ("", "application/pdf"),
        ("application/pdf", "application/pdf"),
        ("application/octet-stream", "application/octet-stream"),
        ("application/pdf, application/octet-stream", "application/pdf"),
    ],
)
def test_a_pdf_answers_the_media_type_asked_for(owner_api, books, accept, media):
    headers = {"HTTP_ACCEPT": accept} if accept else {}

    response = owner_api.get(f"/v1/credit-notes/{books.credit_note.id}/pdf", **headers)

    assert response.status_code == 200
    assert response["Content-Type"] == media
    assert response.content.startswith(b"%PDF-")


def test_a_delete_documents_what_it_answers(openapi):
    """CONTRACT §3: 200 with ``data: {"id", "deleted": true}`` (or 202 with the action), never
    a bodiless 204 the API does not send."""
    answers = {
        operation["operationId"]: sorted(s for s in operation["responses"] if s.startswith("2"))
        for _, method, operation in operations(openapi)
        if method == "delete"
    }

    assert answers["admin_nodes_destroy"] == ["200"]
    assert all(statuses in (["200"], ["202"]) for statuses in answers.values()), answers


def test_only_operations_called_with_an_api_key_take_an_idempotency_key(openapi):
    """The middleware keeps answers per API key: the agent's endpoints (a node token) never read
    the header, so a schema that offered it would promise what they do not do."""
    offered = {
        operation["operationId"]
        for _, method, operation in operations(openapi)
        if method == "post"
        and "Idempotency-Key" in [each["name"] for each in operation.get("parameters", [])]
    }

    assert {"agent_hello", "agent_usage", "agent_events"}.isdisjoint(offered)
    assert {"servers_create", "tickets_create", "subscriptions_create"} <= offered


def test_a_field_with_a_regex_of_its_own_is_documented_by_that_regex(openapi):
    """Not by the generic "not only white space" pattern, which let the fuzzer send ids the
    server refuses as schema-valid."""
    server = openapi["components"]["schemas"]["AgentHelloServerRequest"]["properties"]["id"]

    assert server["pattern"] == "^(srv|bot)_[A-Za-z0-9]{1,60}$"
