"""The staff reports page: staff only, every report as a table with its CSV, the month range
and currency from the form, the default range when the form is wrong."""

import re
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


# --- What the page calls things: names, not the reports' machine values ---------------------

from tests.analytics.test_reports_billing import receivables  # noqa: E402, F401 - a fixture
from tests.analytics.test_reports_mrr import snapshot  # noqa: E402
from tests.analytics.test_reports_operations import desk  # noqa: E402, F401 - a fixture


def test_the_tables_name_buckets_statuses_departments_and_durations(receivables, desk):  # noqa: F811
    boss = UserFactory(email="boss@hosting.example", is_staff=True, is_superuser=True)
    ServerFactory(status="install_failed")
    answer = page(boss, start_month="2026-10", end_month="2026-10", currency="EUR")
    html = answer.content.decode()
    # Aging buckets by their days (en dashes), never their keys.
    assert "<td>0\u201330 days</td>" in html and "<td>Over 90 days</td>" in html
    cells = re.findall(r"<t[dh][^>]*>([^<]*)</t[dh]>", html)
    assert not {"days_0_30", "days_over_90", "install_failed", "server", "eu-central"} & set(cells)
    # Statuses by their display names, kinds and regions by name.
    assert "<td>Install failed</td>" in html and "<td>install_failed</td>" not in html
    assert "<td>Server</td>" in html
    # Departments by name, under "Department"; their ids are the CSV's.
    office, _, _ = desk
    assert "Office" in cells and office.id not in cells
    assert '<th scope="col">Department</th>' in html
    assert "Department name" not in cells
    # Durations in readable units; no "business seconds" anywhere on the page.
    assert not [cell for cell in cells if "seconds" in cell.lower()]
    assert "<td>30 min 00 s</td>" in html or "<td>3 min 00 s</td>" in html
    # The CSV keeps the machine values.
    with time_machine.travel(OCTOBER_20, tick=False):
        csv = signed_in(boss).get("/staff/reports/ar-aging.csv", {"currency": "EUR"})
    assert "EUR,days_0_30,6,2200" in csv.content.decode()


def test_it_says_when_the_first_mrr_snapshot_comes_when_none_was_taken(staff):
    html = page(staff).content.decode()
    notes = html.count("No MRR snapshot has been taken yet")
    assert notes == 2  # the MRR report and the churn report
    assert "<code>manage.py housekeeping</code>" in html
    assert "<code>manage.py mrr_snapshot</code> takes one now" in html
    assert "Nothing to report" not in html.split('data-report="revenue"')[0]


def test_it_says_when_the_next_snapshot_comes_when_the_snapshots_found_nobody(staff):
    snapshot(OCTOBER_20.date(), {})  # taken, nobody paying yet
    html = page(staff, start_month="2026-10", end_month="2026-10").content.decode()
    assert "No MRR snapshot has been taken yet" not in html
    assert (
        "The latest snapshot, of 20 Oct 2026 (taken 00:05 UTC), counted 0 paying accounts" in html
    )
    assert "housekeeping takes on 21 Oct 2026" in html


def test_a_snapshot_of_paying_accounts_fills_the_mrr_report(staff):
    snapshot(OCTOBER_20.date(), {"acct_A": ("EUR", 1500)})
    html = page(staff, start_month="2026-10", end_month="2026-10").content.decode()
    assert "MRR snapshot" not in html
    assert "<td>2026-10</td><td>EUR</td><td>0.00 EUR</td><td>15.00 EUR</td>" in html
