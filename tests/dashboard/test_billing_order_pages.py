"""Ordering a plan in the dashboard (plan → game → settings) and the subscriptions pages:
list, change plan with a preview, cancel and resume; and who may."""

from datetime import UTC, datetime

import pytest

from accounts.actors import SYSTEM
from accounts.roles import Role
from billing.clock import billing_clock_advance
from billing.models import Invoice, Subscription
from billing.services import balance_change, balance_of
from servers.models import Server
from tests.dashboard import messages_of, signed_in
from tests.factories import MembershipFactory, PriceFactory
from tests.servers.helpers import run_worker

pytestmark = pytest.mark.django_db
NOW = datetime(2031, 3, 1, 12, 0, tzinfo=UTC)
SETTINGS = {"name": "Survival SMP", "region": "eu-central", "variable_EULA": "on"}


@pytest.fixture(autouse=True)
def clock(account):
    return billing_clock_advance(account=account, to=NOW)


@pytest.fixture
def plans(db):
    return {
        "small": PriceFactory(
            product__name="Minecraft 2 GB", product__games=["minecraft-java"], unit_amount=600
        ),
        "big": PriceFactory(
            product__name="Minecraft 4 GB",
            product__memory_mb=4096,
            product__cpu_percent=200,
            product__disk_mb=20480,
            product__games=["minecraft-java"],
            unit_amount=1200,
        ),
        "bot": PriceFactory(
            product__name="Bot 256 MB",
            product__kind="bot",
            product__memory_mb=256,
            product__cpu_percent=25,
            product__disk_mb=1024,
            unit_amount=150,
        ),
    }


def credit(account, amount):
    balance_change(
        account=account,
        amount=amount,
        currency="EUR",
        kind="adjustment",
        description="Top-up",
        actor=SYSTEM,
    )


def order_url(price, game="minecraft-java"):
    return f"/billing/order?price={price.id}" + (f"&game={game}" if game else "")


def place_order(client, url, data, **kwargs):
    """Confirm the order at the summary its page shows (``test_order_summary_page.py``)."""
    summary = client.get(url).context["summary"]["key"]
    return client.post(url, {**data, "summary": summary}, **kwargs)


def test_the_plan_step_lists_plans_of_the_kind_with_their_prices(owner, account, plans):
    client = signed_in(owner, account)
    page = client.get("/billing/order").content.decode()
    assert "Minecraft 2 GB" in page and "6.00 EUR a month" in page
    assert "Bot 256 MB" not in page
    bots = client.get("/billing/order?kind=bot").content.decode()
    assert "Bot 256 MB" in bots and "Minecraft" not in bots


def test_a_plan_with_one_game_goes_straight_to_the_settings(owner, account, plans):
    page = signed_in(owner, account).get(f"/billing/order?price={plans['small'].id}")
    assert page.context["step"] == "settings"
    assert page.context["game"].slug == "minecraft-java"
    assert "memory_mb" not in page.context["form"].fields  # the plan decides the resources


def test_ordering_with_credit_creates_the_server_at_once(owner, account, plans):
    credit(account, 5000)
    client = signed_in(owner, account)

    response = place_order(client, order_url(plans["small"]), SETTINGS)

    subscription = Subscription.objects.get()
    assert subscription.status == "active"
    assert response.status_code == 302
    assert response["Location"] == f"/servers/{subscription.server_id}"
    run_worker()
    server = Server.objects.get(pk=subscription.server_id)
    assert (server.name, server.memory_mb) == ("Survival SMP", 2048)
    assert balance_of(account) == 5000 - 600


def test_ordering_without_credit_lands_on_the_invoice_to_pay(owner, account, plans):
    client = signed_in(owner, account)
    response = place_order(client, order_url(plans["small"]), SETTINGS, follow=True)

    invoice = Invoice.objects.get()
    assert response.redirect_chain[-1][0] == f"/billing/invoices/{invoice.id}"
    # It says what happens and where to pay, not that paying is one click away (it may be a
    # bank transfer that staff record).
    assert messages_of(response) == [
        f"Ordered “Survival SMP”: it is created once invoice {invoice.number} is paid. "
        "The ways to pay it are below."
    ]
    assert 'id="ways-to-pay"' in response.content.decode()
    assert not Server.objects.exists()


def test_a_refused_order_shows_the_error_on_its_field_and_writes_nothing(owner, account, plans):
    client = signed_in(owner, account)
    response = client.post(order_url(plans["small"]), {**SETTINGS, "promotion_code": "NOPE"})

    assert response.status_code == 200
    assert response.context["form"].errors["promotion_code"] == [
        "This promotion code does not exist."
    ]
    assert not Subscription.objects.exists()
    missing_eula = client.post(order_url(plans["small"]), {**SETTINGS, "variable_EULA": ""})
    assert "variable_EULA" in missing_eula.context["form"].errors


def test_a_bot_plan_orders_a_bot(owner, account, plans):
    credit(account, 1000)
    response = place_order(
        signed_in(owner, account),
        f"/billing/order?price={plans['bot'].id}",
        {
            "name": "Mod bot",
            "region": "eu-central",
            "runtime": "python-3.13",
            "start_command": "python bot.py",
            "environment": "",
            "token": "MTA1NjY3ODkwMTIzNDU2Nzg5.GaBcDe.abcdefghijklmnopqrstuvwxyz0123456789AB",
        },
    )
    subscription = Subscription.objects.get()
    assert response["Location"] == f"/bots/{subscription.bot_id}"


def test_subscriptions_list_searches_and_filters(owner, account, plans):
    credit(account, 5000)
    client = signed_in(owner, account)
    place_order(client, order_url(plans["small"]), SETTINGS)
    place_order(client, order_url(plans["small"]), {**SETTINGS, "name": "Creative"})

    listed = client.get("/billing/subscriptions?q=creat").context["subscriptions"]
    assert [s.order["name"] for s in listed] == ["Creative"]
    assert len(client.get("/billing/subscriptions?status=active").context["subscriptions"]) == 2
    assert list(client.get("/billing/subscriptions?status=canceled").context["subscriptions"]) == []


def test_change_plan_previews_then_changes(owner, account, plans):
    credit(account, 5000)
    client = signed_in(owner, account)
    place_order(client, order_url(plans["small"]), SETTINGS)
    subscription = Subscription.objects.get()
    page = f"/billing/subscriptions/{subscription.id}"

    preview = client.get(f"{page}?price={plans['big'].id}").context["preview"]
    assert preview["outcome"] == "invoice"
    assert preview["total"] == "6.00 EUR"  # the whole period left: 12.00 - 6.00

    response = client.post(f"{page}/change", {"price": plans["big"].id}, follow=True)
    assert messages_of(response) == ["Changed to Minecraft 4 GB."]
    assert Subscription.objects.get().price == plans["big"]


def test_cancel_at_period_end_resume_then_cancel_now(owner, account, plans):
    credit(account, 5000)
    client = signed_in(owner, account)
    place_order(client, order_url(plans["small"]), SETTINGS)
    subscription = Subscription.objects.get()
    page = f"/billing/subscriptions/{subscription.id}"

    client.post(f"{page}/cancel", {"at_period_end": "1"})
    assert Subscription.objects.get().cancel_at_period_end is True
    client.post(f"{page}/resume")
    assert Subscription.objects.get().cancel_at_period_end is False
    client.post(f"{page}/cancel", {"at_period_end": "0"})
    assert Subscription.objects.get().status == "canceled"
    again = client.post(f"{page}/cancel", {"at_period_end": "0"}, follow=True)
    assert "the subscription is canceled" in messages_of(again)[-1]


def test_a_viewer_sees_subscriptions_but_cannot_order_or_cancel(owner, account, plans):
    credit(account, 5000)
    place_order(signed_in(owner, account), order_url(plans["small"]), SETTINGS)
    subscription = Subscription.objects.get()
    viewer = MembershipFactory(account=account, role=Role.VIEWER).user
    client = signed_in(viewer, account)

    assert client.get("/billing/subscriptions").status_code == 200
    assert 'id="place-order"' not in client.get(order_url(plans["small"])).content.decode()
    assert client.post(order_url(plans["small"]), SETTINGS).status_code == 302
    client.post(f"/billing/subscriptions/{subscription.id}/cancel", {"at_period_end": "0"})
    assert Subscription.objects.count() == 1
    assert Subscription.objects.get().status == "active"


def test_a_developer_without_billing_is_told_its_role_does_not_open_it_and_no_order_button(
    owner, account, plans
):
    developer = MembershipFactory(account=account, role=Role.DEVELOPER).user
    client = signed_in(developer, account)
    assert client.get("/billing/order").status_code == 403
    assert client.get("/billing/subscriptions").status_code == 403
    assert 'id="order-server"' not in client.get("/").content.decode()
    assert 'id="order-server"' in signed_in(owner, account).get("/").content.decode()


def test_an_outsider_cannot_see_another_accounts_subscription(
    owner, account, outsider, other_account, plans
):
    credit(account, 5000)
    place_order(signed_in(owner, account), order_url(plans["small"]), SETTINGS)
    subscription = Subscription.objects.get()
    client = signed_in(outsider, other_account)
    assert client.get(f"/billing/subscriptions/{subscription.id}").status_code == 404
    client.post(f"/billing/subscriptions/{subscription.id}/cancel", {"at_period_end": "0"})
    assert Subscription.objects.get().status == "active"


# --- A plan's server: its settings offer the upgrade, deleting it ends the plan ---------------


def _plan_server(client, account, plans) -> tuple[Subscription, Server]:
    credit(account, 5000)
    place_order(client, order_url(plans["small"]), SETTINGS)
    run_worker()
    subscription = Subscription.objects.get()
    return subscription, Server.objects.get(pk=subscription.server_id)


def test_settings_beyond_the_plan_offer_the_plan_that_fits_with_its_prorated_price(
    owner, account, plans
):
    client = signed_in(owner, account)
    subscription, server = _plan_server(client, account, plans)
    edit = f"/servers/{server.id}/edit"
    page = client.get(edit).content.decode()
    assert "Its plan, Minecraft 2 GB, gives at most 2048 MB of memory" in page

    form = {
        "name": server.name,
        "memory_mb": "4096",
        "cpu_percent": "100",
        "disk_mb": "10240",
        "auto_restart": "on",
        "variable_EULA": "on",
    }
    refused = client.post(edit, form)
    assert refused.status_code == 200
    assert "gives at most 2048 for memory_mb" in refused.content.decode()
    upgrade = refused.context["upgrade_url"]
    assert upgrade == (
        f"/billing/subscriptions/{subscription.id}?fits=cpu_percent:100,disk_mb:10240,"
        "memory_mb:4096"
    )
    server.refresh_from_db()
    assert server.memory_mb == 2048

    offer = client.get(upgrade)
    assert offer.context["fitting"] == plans["big"]
    assert offer.context["preview"]["total"] == "6.00 EUR"  # prorated: 12.00 - 6.00
    assert "Minecraft 4 GB" in offer.content.decode()
    client.post(f"/billing/subscriptions/{subscription.id}/change", {"price": plans["big"].id})
    run_worker()
    # The new plan's bounds: now the same settings are saved.
    saved = client.post(edit, form, follow=True)
    assert messages_of(saved)[-1].startswith("Saved"), messages_of(saved)
    server.refresh_from_db()
    assert server.memory_mb == 4096


def test_asking_for_more_than_any_plan_gives_says_so(owner, account, plans):
    client = signed_in(owner, account)
    subscription, _ = _plan_server(client, account, plans)
    response = client.get(f"/billing/subscriptions/{subscription.id}?fits=memory_mb:999999")
    assert response.context["no_fit"] is True and response.context["preview"] is None
    assert 'id="no-fitting-plan"' in response.content.decode()
    # Junk in the query is ignored, never an error.
    junk = client.get(f"/billing/subscriptions/{subscription.id}?fits=memory_mb:%D9%A2,,:x")
    assert junk.status_code == 200


def test_deleting_a_plans_server_asks_then_ends_the_plan(owner, account, plans):
    client = signed_in(owner, account)
    subscription, server = _plan_server(client, account, plans)
    page = client.get(f"/servers/{server.id}/delete").content.decode()
    assert 'id="ends-plan"' in page and "Minecraft 2 GB" in page
    assert "Delete server and end its plan" in page
    client.post(f"/servers/{server.id}/delete")
    subscription.refresh_from_db()
    assert subscription.status == "canceled"


def test_new_server_says_up_front_when_only_a_plan_will_do(owner, account, plans):
    account.unbilled_instances = 0
    account.save()
    client = signed_in(owner, account)
    for page in ("/servers/new", "/bots/new"):
        body = client.get(page).content.decode()
        assert 'id="plan-needed"' in body and 'id="order-plan-instead"' in body, page
    refused = client.post(
        "/servers/new?game=minecraft-java",
        SETTINGS | {"memory_mb": "2048", "cpu_percent": "100", "disk_mb": "10240"},
    )
    assert "plan" in refused.content.decode().lower()
    assert not Server.objects.exists()
    account.unbilled_instances = 1
    account.save()
    assert 'id="plan-needed"' not in client.get("/servers/new").content.decode()


# --- Issue 34, item 4: names, sizes, one currency, a sensible region ----------------------------


def test_plans_show_game_names_sizes_in_gb_and_one_currency_at_a_time(owner, account, plans):
    PriceFactory(product=plans["big"].product, currency="USD", unit_amount=1300)
    client = signed_in(owner)
    page = client.get("/billing/order").content.decode()
    assert "minecraft-java" not in page and "Minecraft: Java Edition" in page
    assert "4 GB" in page and "20 GB" in page and "4096 MB" not in page
    # No currency yet: the first on sale, and a choice; never two currencies mixed.
    assert 'id="currency-choice"' in page
    assert "12.00 EUR" in page and "13.00 USD" not in page
    usd = client.get("/billing/order?currency=usd").content.decode()
    assert "13.00 USD" in usd and "12.00 EUR" not in usd and "Minecraft 2 GB" not in usd


def test_once_the_account_has_a_currency_only_it_is_offered(owner, account, plans):
    from billing.selectors import billing_profile_of

    PriceFactory(product=plans["big"].product, currency="USD", unit_amount=1300)
    profile = billing_profile_of(account)
    profile.currency = "USD"
    profile.save()
    page = signed_in(owner).get("/billing/order?currency=EUR").content.decode()
    assert 'id="currency-choice"' not in page
    assert "13.00 USD" in page and "EUR" not in page.split('id="plan-form"')[1].split("</form>")[0]


def test_the_region_defaults_to_the_last_used_then_the_first_by_name(owner, account, plans):
    from servers.models import Region

    url = f"/billing/order?price={plans['small'].id}&game=minecraft-java"
    first_by_name = Region.objects.order_by("name").first()
    form = signed_in(owner).get(url).context["form"]
    assert form["region"].value() == first_by_name.pk
    used = Region.objects.exclude(pk=first_by_name.pk).order_by("name").last()
    from tests.factories import ServerFactory

    ServerFactory(account=account, region_id=used.pk)
    form = signed_in(owner).get(url).context["form"]
    assert form["region"].value() == used.pk
