"""A plan's backups (issue 30): staff set how many backups its server or bot keeps and how much
storage they take (`backups` in the catalogue's API, the admin form), and provisioning copies
them into the instance's plan, where the backups' limits read them; a plan change moves them."""

import pytest

from accounts.actors import SYSTEM
from billing.clock import billing_clock_advance
from billing.models import Price, Product
from billing.services.subscriptions import subscription_change
from servers.models import Server
from servers.services.backups import backup_limits
from tests.billing.api.test_staff_catalogue_api import PRODUCT, data_of, error_of, post
from tests.billing.test_subscriptions import START, active_subscription, plan

pytestmark = pytest.mark.django_db


def test_staff_set_a_plans_backups_through_the_api(staff_api):
    made = data_of(
        post(staff_api, "/v1/admin/products", {**PRODUCT, "backups": {"limit": 7}}), 201
    )["product"]
    assert made["backups"] == {"limit": 7, "storage_mb": 10240}
    changed = staff_api.patch(
        f"/v1/admin/products/{made['id']}", {"backups": {"storage_mb": 2048}}, format="json"
    )
    assert data_of(changed)["product"]["backups"] == {"limit": 7, "storage_mb": 2048}
    product = Product.objects.get(pk=made["id"])
    assert (product.backup_limit, product.backup_storage_mb) == (7, 2048)


@pytest.mark.parametrize(
    "backups,field,code",
    [
        ({"limit": -1}, "backups.limit", "min_value"),
        ({"storage_mb": 10**9}, "backups.storage_mb", "max_value"),
        ({"count": 3}, "backups.count", "unknown_field"),
    ],
)
def test_a_bad_backups_value_is_refused_by_field(staff_api, backups, field, code):
    error = error_of(post(staff_api, "/v1/admin/products", {**PRODUCT, "backups": backups}), 400)
    assert (field, code) in [(item["name"], item["code"]) for item in error["details"]["fields"]]


def test_provisioning_copies_the_plans_backups_and_a_change_moves_them(account, owner):
    billing_clock_advance(account=account, to=START)
    iron = plan("Iron", 1000)
    Product.objects.filter(prices=iron).update(backup_limit=5, backup_storage_mb=4096)
    subscription = active_subscription(account, owner, iron)
    server = Server.objects.get(pk=subscription.server_id)
    assert (server.plan["backup_limit"], server.plan["backup_storage_mb"]) == (5, 4096)
    assert backup_limits(server) == (5, 4096)

    gold = Price.objects.create(
        product=Product.objects.create(
            name="Gold",
            kind="server",
            memory_mb=8192,
            cpu_percent=400,
            disk_mb=40960,
            backup_limit=12,
            backup_storage_mb=51200,
        ),
        currency="EUR",
        unit_amount=1000,
        interval="month",
    )
    subscription_change(subscription=subscription, price=gold.id, actor=SYSTEM)
    server.refresh_from_db()
    assert backup_limits(server) == (12, 51200)


def test_a_plan_from_before_backups_has_the_settings_defaults(account, settings):
    settings.BACKUP_DEFAULT_LIMIT, settings.BACKUP_DEFAULT_STORAGE_MB = 4, 999
    server = Server(account=account, plan={"subscription": "sub_x", "memory_mb": 2048})
    assert backup_limits(server) == (4, 999)
