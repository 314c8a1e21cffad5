"""The staff reports page: staff only, every report as a table with its CSV, the month range
and currency from the form, the default range when the form is wrong."""

from datetime import UTC, datetime

import pytest
import time_machine

from tests.analytics.test_reports_mrr import history  # noqa: F401 - the MRR story, a fixture
from tests.dashboard import signed_in
from tests.factories import ServerFactory, UserFactory

pytestmark = pytest.mark.django_db
OCTOBER_20 = datetime(2026, 10, 20, 12, tzinfo=UTC)


@pytest.fixture
def staff(db):
    return UserFactory(email="finance@hosting.example", is_staff=True)


def page(user, **params):
    with time_machine.travel(OCTOBER_20, tick=False):
        return signed_in(user).get("/staff/reports", params)


def test_staff_see_every_report_with_tables_and_csv_links(staff, history, account):  # noqa: F811
    ServerFactory(account=account, status="running")
    answer = page(staff, start_month="2026-09", end_month="2026-10", currency="EUR")
    assert answer.status_code == 200
    html = answer.content.decode()
    for name in ("mrr", "revenue", "churn", "ar-aging", "tickets", "fleet", "nodes"):
        assert f'data-report="{name}"' in html
        assert f'href="/staff/reports/{name}.csv?start_month=2026-09' in html
    # September in EUR as the MRR table writes it: 15.00 EUR at the start, 28.00 EUR new.
    assert "<td>2026-09</td><td>EUR</td><td>15.00 EUR</td><td>28.00 EUR</td>" in html
    assert 'id="nav-reports" href="/staff/reports" aria-current="page"' in html
    assert 'id="staff-reports"' in html and "js/staff_reports.js" in html


def test_the_csv_download_has_the_pages_range(staff, history):  # noqa: F811
    with time_machine.travel(OCTOBER_20, tick=False):
        answer = signed_in(staff).get(
            "/staff/reports/mrr.csv", {"start_month": "2026-10", "end_month": "2026-10"}
        )
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/csv")
    lines = answer.content.decode().splitlines()
    assert lines[0] == (
        "month,currency,mrr_start,new,reactivation,expansion,contraction,churn,mrr_end"
    )
    assert lines[1] == "2026-10,EUR,4000,0,700,200,0,-2000,2900"
    with time_machine.travel(OCTOBER_20, tick=False):
        assert signed_in(staff).get("/staff/reports/nothing.csv").status_code == 404


def test_a_wrong_range_shows_its_error_and_the_default_range(staff, history):  # noqa: F811
    html = page(staff, start_month="2026-10", end_month="2026-09").content.decode()
    assert "The first month may not be after the last." in html
    assert "<td>2025-11</td>" in html  # the 12 months to October 2026


def test_customers_get_the_404_page(owner, account):
    assert signed_in(owner).get("/staff/reports").status_code == 404
    assert signed_in(owner).get("/staff/reports/mrr.csv").status_code == 404
    assert 'id="nav-reports"' not in signed_in(owner).get("/").content.decode()
