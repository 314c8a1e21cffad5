"""What every report endpoint shares: the CSV export (its text, name and formula escaping),
parameters read strictly with errors in the JSON envelope even for CSV, the defaults, and
answers that match the OpenAPI document."""

import csv
import io
from datetime import UTC, date, datetime

import pytest
import time_machine

from analytics.models import MrrSnapshot, MrrSnapshotDay
from servers.models import Bot
from tests.analytics.test_reports_billing import issue, line
from tests.factories import PriceFactory, ServerFactory, SubscriptionFactory
from tests.test_openapi import validator_for

pytestmark = pytest.mark.django_db
OCTOBER_20 = datetime(2026, 10, 20, 12, 0, tzinfo=UTC)
STAFF_REPORTS = ["mrr", "revenue", "ar-aging", "churn", "tickets", "fleet"]


@pytest.fixture
def history(db):
    """A pays 1000 from 1 Sep, 700 from 15 Sep; B joins on 1 Oct (a September movement)."""
    for day, mrr in [
        (date(2026, 9, 1), {"acct_A": 1000}),
        (date(2026, 9, 15), {"acct_A": 700}),
        (date(2026, 10, 1), {"acct_A": 700, "acct_B": 500}),
    ]:
        MrrSnapshotDay.objects.create(
            day=day, taken_at=datetime.combine(day, datetime.min.time(), UTC)
        )
        for account_id, amount in mrr.items():
            MrrSnapshot.objects.create(
                day=day, account_id=account_id, currency="EUR", mrr=amount, subscriptions=1
            )


def get(api, path: str, **params):
    with time_machine.travel(OCTOBER_20, tick=False):
        return api.get(path, params)


def test_the_csv_export_has_the_same_rows_as_the_report(staff_api, history):
    params = {"start_month": "2026-09", "end_month": "2026-09"}
    rows = get(staff_api, "/v1/admin/reports/mrr", **params).json()["data"]["report"]["rows"]

    response = get(staff_api, "/v1/admin/reports/mrr", format="csv", **params)

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="mrr-2026-09-2026-09.csv"'
    # 1000 on 1 Sep; -300 on the 15th; B's 500 on 1 Oct is September's (new): 1200.
    assert response.content.decode() == (
        "month,currency,mrr_start,new,reactivation,expansion,contraction,churn,mrr_end\r\n"
        "2026-09,EUR,1000,500,0,0,-300,0,1200\r\n"
    )
    assert rows == [
        {
            "month": "2026-09",
            "currency": "EUR",
            "mrr_start": 1000,
            "new": 500,
            "reactivation": 0,
            "expansion": 0,
            "contraction": -300,
            "churn": 0,
            "mrr_end": 1200,
        },
    ]
    assert "X-RateLimit-Remaining" in response and response["X-Request-Id"].startswith("req_")


def test_csv_writes_rates_as_numbers_and_nothing_as_an_empty_cell(staff_api, history):
    response = get(
        staff_api,
        "/v1/admin/reports/churn",
        format="csv",
        start_month="2026-08",
        end_month="2026-09",
        currency="EUR",
    )

    assert response["Content-Disposition"] == (
        'attachment; filename="churn-2026-08-2026-09-EUR.csv"'
    )
    assert response.content.decode().splitlines() == [
        "month,currency,customers_start,customers_churned,customer_churn_rate,mrr_start,churn,"
        "contraction,expansion,reactivation,gross_revenue_churn_rate,net_revenue_churn_rate",
        # Nobody paid on 1 Aug: no rate. In September A lost 300 of 1000: 0.3 both ways.
        "2026-08,EUR,0,0,,0,0,0,0,0,,",
        "2026-09,EUR,1,0,0.0,1000,0,-300,0,0,0.3,0.3",
    ]


def test_csv_text_that_a_spreadsheet_would_run_is_escaped(owner_api, account):
    plan = PriceFactory(product__name="Plan")
    server = ServerFactory(account=account, name='=HYPERLINK("http://evil.example","Hi")')
    bot = Bot.objects.create(
        account=account,
        name="-1+1",
        region_id="eu-central",
        runtime="python-3.13",
        start_command="python bot.py",
        token_encrypted="x",
        token_last4="abcd",
    )
    for instance, amount in ((server, 1200), (bot, 1000)):
        subscription = SubscriptionFactory(
            account=account,
            price=plan,
            billing_cycle_anchor=OCTOBER_20,
            current_period_start=OCTOBER_20,
            current_period_end=OCTOBER_20,
            **{instance.kind: instance},
        )
        issue(account, datetime(2026, 10, 5, tzinfo=UTC), line(amount), subscription=subscription)

    response = get(owner_api, "/v1/analytics/reports/spend", format="csv", group_by="server")

    assert response["Content-Disposition"] == (
        'attachment; filename="spend-2025-11-2026-10-server.csv"'
    )
    assert list(csv.reader(io.StringIO(response.content.decode()))) == [
        [
            "kind",
            "instance_id",
            "name",
            "currency",
            "invoices",
            "billed",
            "paid",
            "credited",
            "outstanding",
        ],
        [
            "server",
            server.id,
            '\'=HYPERLINK("http://evil.example","Hi")',
            "EUR",
            "1",
            "1200",
            "0",
            "0",
            "1200",
        ],
        ["bot", bot.id, "'-1+1", "EUR", "1", "1000", "0", "0", "1000"],
    ]


@pytest.mark.parametrize("report", STAFF_REPORTS)
def test_every_staff_report_exports_csv(staff_api, report):
    response = get(staff_api, f"/v1/admin/reports/{report}", format="csv")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    name = report.replace("-", "_")
    assert response["Content-Disposition"].startswith(f'attachment; filename="{name}-')
    header = response.content.decode().splitlines()[0]
    json_report = get(staff_api, f"/v1/admin/reports/{report}").json()["data"]["report"]
    assert header == ",".join(column["name"] for column in json_report["columns"])


def test_the_reports_default_to_the_twelve_months_to_this_one(staff_api, owner_api):
    mrr = get(staff_api, "/v1/admin/reports/mrr").json()["data"]["report"]
    spend = get(owner_api, "/v1/analytics/reports/spend").json()["data"]["report"]
    aging = get(staff_api, "/v1/admin/reports/ar-aging").json()["data"]["report"]

    assert mrr["parameters"] == {"start_month": "2025-11", "end_month": "2026-10", "currency": None}
    assert spend["parameters"] == {
        "start_month": "2025-11",
        "end_month": "2026-10",
        "group_by": "month",
    }
    assert aging["parameters"] == {"as_of": "2026-10-20", "group_by": "bucket", "currency": None}
    assert (
        get(staff_api, "/v1/admin/reports/mrr", start_month="2026-07").json()["data"]["report"][
            "parameters"
        ]["end_month"]
        == "2026-10"
    )


@pytest.mark.parametrize(
    ("path", "params", "name", "code"),
    [
        ("mrr", {"format": "xlsx"}, "format", "invalid_choice"),
        ("mrr", {"start_month": "2026-13"}, "start_month", "invalid"),
        ("mrr", {"start_month": "2026-1"}, "start_month", "invalid"),
        ("mrr", {"start_month": "1969-12"}, "start_month", "invalid"),
        ("mrr", {"end_month": "2026-11"}, "end_month", "max_value"),  # after this month
        ("mrr", {"start_month": "2026-10", "end_month": "2026-09"}, "start_month", "invalid"),
        ("mrr", {"start_month": "2016-10"}, "start_month", "out_of_range"),  # 121 months
        ("churn", {"currency": "XYZ"}, "currency", "invalid_choice"),
        ("revenue", {"group_by": "account"}, "group_by", "invalid_choice"),
        ("ar-aging", {"as_of": "2026-02-30"}, "as_of", "invalid"),
        ("ar-aging", {"as_of": "20261020"}, "as_of", "invalid"),
        ("ar-aging", {"as_of": ""}, "as_of", "blank"),
        ("fleet", {"group_by": "game"}, "group_by", "invalid_choice"),
        ("tickets", {"end_month": "October"}, "end_month", "invalid"),
    ],
)
def test_bad_parameters_are_refused_in_json_even_for_csv(staff_api, path, params, name, code):
    for wanted in ({}, {"format": "csv"}):
        response = get(staff_api, f"/v1/admin/reports/{path}", **{**wanted, **params})

        assert response.status_code == 400
        assert response["Content-Type"] == "application/json"
        error = response.json()["error"]
        assert error["code"] == "invalid_parameter"
        assert [
            (problem["name"], problem["code"]) for problem in error["details"]["parameters"]
        ] == [(name, code)]


def test_a_range_of_120_months_is_accepted(staff_api):
    response = get(staff_api, "/v1/admin/reports/mrr", start_month="2016-11")

    assert response.status_code == 200
    assert len(response.json()["data"]["report"]["rows"]) == 0  # no snapshot, no currency


def test_a_parameter_given_twice_is_refused(owner_api):
    with time_machine.travel(OCTOBER_20, tick=False):
        response = owner_api.get("/v1/analytics/reports/spend?group_by=month&group_by=server")

    assert response.status_code == 400
    assert response.json()["error"]["details"]["parameters"][0]["code"] == "multiple_values"


def test_format_means_nothing_to_the_other_endpoints(owner_api):
    response = owner_api.get("/v1/servers", {"format": "csv"})

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json()["success"] is True


def test_a_report_needs_a_key(client_for):
    response = client_for(None).get("/v1/analytics/reports/spend")

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_required"


@pytest.fixture
def openapi(db) -> dict:
    from rest_framework.test import APIClient

    return APIClient().get("/v1/openapi.json").json()


def test_the_document_offers_each_report_as_json_and_its_csv_as_its_own_operation(openapi):
    """Issue 28: a generated client calls the CSV as its own operation (``<report>.csv``, text),
    never a JSON operation that may answer CSV; ``format`` is no longer documented."""
    for path in ["/v1/analytics/reports/spend", *(f"/v1/admin/reports/{r}" for r in STAFF_REPORTS)]:
        for suffix, media in (("", "application/json"), (".csv", "text/csv")):
            operation = openapi["paths"][path + suffix]["get"]
            assert set(operation["responses"]["200"]["content"]) == {media}, path + suffix
            parameters = {parameter["name"] for parameter in operation["parameters"]}
            assert "format" not in parameters, path + suffix
            assert {"400", "401", "403", "429"} <= set(operation["responses"]), path + suffix
        documented = openapi["paths"][path]["get"]["responses"]["400"]["content"]
        examples = documented["application/json"]["examples"]
        assert examples["InvalidParameter"]["value"]["error"]["code"] == "invalid_parameter"


def test_answers_match_the_documented_schema(openapi, staff_api, owner_api, history):
    answers = [
        ("/v1/admin/reports/mrr", get(staff_api, "/v1/admin/reports/mrr")),
        ("/v1/admin/reports/churn", get(staff_api, "/v1/admin/reports/churn")),
        ("/v1/analytics/reports/spend", get(owner_api, "/v1/analytics/reports/spend")),
    ]
    for path, response in answers:
        validator = validator_for(
            openapi,
            "paths",
            path,
            "get",
            "responses",
            "200",
            "content",
            "application/json",
            "schema",
        )
        assert [error.message for error in validator.iter_errors(response.json())] == []
