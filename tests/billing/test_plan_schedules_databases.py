"""A plan's schedules and databases (issue 31): staff set how many each server or bot may have
(`schedules.limit`, `databases.limit` in the catalogue's API, the admin form), provisioning
copies them into the instance's plan, where the schedules' and databases' limits read them, and
a plan from before them reads the settings' defaults."""

import pytest

from billing.clock import billing_clock_advance
from billing.models import Product
from databases.services import database_limit
from servers.models import Server
from servers.services.schedules import schedule_limit
from tests.billing.api.test_staff_catalogue_api import PRODUCT, data_of, error_of, post
from tests.billing.test_subscriptions import START, active_subscription, plan

pytestmark = pytest.mark.django_db


def test_staff_set_a_plans_schedules_and_databases_through_the_api(staff_api):
    body = {**PRODUCT, "schedules": {"limit": 9}}
    made = data_of(post(staff_api, "/v1/admin/products", body), 201)["product"]
    assert (made["schedules"], made["databases"]) == ({"limit": 9}, {"limit": 1})
    changed = staff_api.patch(
        f"/v1/admin/products/{made['id']}", {"databases": {"limit": 4}}, format="json"
    )
    product = data_of(changed)["product"]
    assert (product["schedules"], product["databases"]) == ({"limit": 9}, {"limit": 4})
    stored = Product.objects.get(pk=made["id"])
    assert (stored.schedule_limit, stored.database_limit) == (9, 4)


@pytest.mark.parametrize(
    "area,value,field,code",
    [
        ("schedules", {"limit": -1}, "schedules.limit", "min_value"),
        ("databases", {"limit": 101}, "databases.limit", "max_value"),
        ("databases", {}, "databases.limit", "required"),
        ("schedules", {"count": 3}, "schedules.count", "unknown_field"),
    ],
)
def test_a_bad_value_is_refused_by_field(staff_api, area, value, field, code):
    error = error_of(post(staff_api, "/v1/admin/products", {**PRODUCT, area: value}), 400)
    assert (field, code) in [(item["name"], item["code"]) for item in error["details"]["fields"]]


def test_provisioning_copies_the_plans_counts(account, owner):
    billing_clock_advance(account=account, to=START)
    iron = plan("Iron", 1000)
    Product.objects.filter(prices=iron).update(schedule_limit=7, database_limit=3)
    subscription = active_subscription(account, owner, iron)
    server = Server.objects.get(pk=subscription.server_id)
    assert (server.plan["schedule_limit"], server.plan["database_limit"]) == (7, 3)
    assert (schedule_limit(server), database_limit(server)) == (7, 3)


def test_a_plan_from_before_them_has_the_settings_defaults(account, settings):
    settings.SCHEDULE_DEFAULT_LIMIT, settings.DATABASE_DEFAULT_LIMIT = 6, 2
    server = Server(account=account, plan={"subscription": "sub_x", "memory_mb": 2048})
    assert (schedule_limit(server), database_limit(server)) == (6, 2)
