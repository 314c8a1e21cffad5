"""A plan's allocations (issue 32): staff set how many ``ip:port`` each server may hold
(`allocations.limit` in the catalogue's API, the admin form), provisioning copies it into the
server's plan, where the allocations' limit reads it; a plan from before it gives one."""

import pytest

from billing.clock import billing_clock_advance
from billing.models import Product
from servers.models import Server
from servers.services.allocations import allocation_limit
from tests.billing.api.test_staff_catalogue_api import PRODUCT, data_of, error_of, post
from tests.billing.test_subscriptions import START, active_subscription, plan

pytestmark = pytest.mark.django_db


def test_staff_set_a_plans_allocations_through_the_api(staff_api):
    made = data_of(post(staff_api, "/v1/admin/products", PRODUCT), 201)["product"]
    assert made["allocations"] == {"limit": 1}
    changed = staff_api.patch(
        f"/v1/admin/products/{made['id']}", {"allocations": {"limit": 4}}, format="json"
    )
    assert data_of(changed)["product"]["allocations"] == {"limit": 4}
    assert Product.objects.get(pk=made["id"]).allocation_limit == 4


@pytest.mark.parametrize(
    "value,code", [({"limit": 0}, "min_value"), ({"limit": 21}, "max_value"), ({}, "required")]
)
def test_a_bad_limit_is_refused_by_field(staff_api, value, code):
    body = {**PRODUCT, "allocations": value}
    error = error_of(post(staff_api, "/v1/admin/products", body), 400)
    fields = [(item["name"], item["code"]) for item in error["details"]["fields"]]
    assert ("allocations.limit", code) in fields


def test_provisioning_copies_the_plans_allocations(account, owner):
    billing_clock_advance(account=account, to=START)
    iron = plan("Iron", 1000)
    Product.objects.filter(prices=iron).update(allocation_limit=3)
    subscription = active_subscription(account, owner, iron)
    server = Server.objects.get(pk=subscription.server_id)
    assert server.plan["allocation_limit"] == 3
    assert allocation_limit(server) == 3


def test_a_plan_from_before_them_gives_the_primary_only(account):
    server = Server(
        account=account, game_id="minecraft-java", plan={"subscription": "sub_x", "memory_mb": 1}
    )
    assert allocation_limit(server) == 1
