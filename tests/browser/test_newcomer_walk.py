"""The newcomer list of issue 13, walked again in a real browser: each test is one stop of the
walk and checks what a person sees there (the page's text, its status, its elements)."""

import re

import pytest

from accounts.actors import Actor
from accounts.models import Account, User
from accounts.services import api_key_create
from events.catalogue import EVENT_TYPES
from servers.models import Server, ServerStatus
from servers.services import server_create
from tests.browser.conftest import give_second_factor, type_second_factor
from tests.factories import MembershipFactory, ServerFactory, UserFactory
from tests.servers.helpers import MINECRAFT, run_worker
from webhooks.services import endpoint_create, endpoint_send_test

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PASSWORD = "correct-horse-battery"  # what tests.factories.UserFactory sets
PHONE = {"width": 390, "height": 844}
# What Django's yellow debug pages say; the product's own pages never do.
DEBUG_PAGE_TEXTS = ["Page not found (404)", "URLconf", "DEBUG = True", "Request Method:"]
# The customer pages in the main menu, which someone in no account has no use for.
CUSTOMER_MENUS = ["Servers", "Bots", "API Keys", "Webhooks", "Team"]


def owner_of(account_name: str) -> tuple[User, Account]:
    membership = MembershipFactory(account__name=account_name)
    return membership.user, membership.account


def sign_in(page, user: User, secret: str | None = None) -> None:
    page.goto("/login")
    page.fill("[name=username]", user.email)
    page.fill("[name=password]", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    if secret:
        type_second_factor(page, secret)
    page.wait_for_url(re.compile(r".*/(staff)?$"))  # staff with no account: their home


def server_names(page) -> list[str]:
    return page.locator("#servers tbody tr td:first-child").all_inner_texts()


def assert_within_width(locator, width: int) -> None:
    """On screen from its left edge to its right edge, not cut off or scrolled out of sight."""
    expect(locator).to_be_visible()
    box = locator.bounding_box()
    assert box is not None
    assert box["x"] >= 0, box
    assert box["x"] + box["width"] <= width, box


def test_wrong_addresses_answer_the_products_own_pages_and_the_icon_loads(page, screenshot):
    owner, account = owner_of("Owner's Hosting")
    server = ServerFactory(account=account, name="Survival SMP")
    failed = []
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)

    # A mistyped address, before and after signing in: the dashboard's own page, a way back,
    # and no list of URL patterns.
    response = page.goto("/sevrers")
    assert response.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
    sign_in(page, owner)
    response = page.goto("/sevrers")
    assert response.status == 404
    expect(page).to_have_title("Not found · Hosting Management")
    expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
    for debug_text in DEBUG_PAGE_TEXTS:
        expect(page.locator("body")).not_to_contain_text(debug_text)
    screenshot("newcomer-404")
    page.get_by_role("link", name="Back to the dashboard").click()
    page.wait_for_url("/")
    expect(page.get_by_role("link", name="Survival SMP")).to_be_visible()

    # A POST-only address opened as a page.
    response = page.goto(f"/servers/{server.id}/actions")
    assert response.status == 405
    expect(page).to_have_title("Not available · Hosting Management")
    expect(page.get_by_role("heading", level=1)).to_have_text("Not available this way")
    for debug_text in DEBUG_PAGE_TEXTS:
        expect(page.locator("body")).not_to_contain_text(debug_text)
    expect(page.get_by_role("link", name="Back to the dashboard")).to_have_attribute("href", "/")
    screenshot("newcomer-405")

    # The icon the pages name loads, and so does /favicon.ico, which browsers ask for anyway.
    icon_href = page.locator("link[rel=icon]").get_attribute("href")
    icon = page.request.get(icon_href)
    assert icon.status == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
    favicon = page.request.get("/favicon.ico")
    assert favicon.status == 200
    assert favicon.url.endswith(icon_href)
    assert favicon.body() == icon.body()
    # Nothing else any of these pages loaded (stylesheet, script, icon) failed either.
    assert [url for url in failed if not url.endswith(("/sevrers", "/actions"))] == []


def test_a_new_customer_signs_up_and_finds_servers_in_a_long_list(page, screenshot):
    page.goto("/signup")
    page.fill("[name=name]", "Ada Lovelace")
    page.fill("[name=email]", "ada@example.com")
    page.fill("[name=account_name]", "Analytical Hosting")
    page.fill("[name=password1]", "a-long-and-unusual-passphrase")
    page.fill("[name=password2]", "a-long-and-unusual-passphrase")
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url("/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Servers")
    expect(page.locator("#live")).to_contain_text("This account has no servers yet.")

    # Demo-like data: two servers made as the dashboard makes them, installed by the real
    # worker (stopped, each with its address), and 28 more at rest, made directly.
    account = Account.objects.get(name="Analytical Hosting")
    # A sign-up orders plans (no unbilled allowance); this host gives one, as staff would.
    Account.objects.filter(pk=account.pk).update(
        unbilled_instances=2,
        unbilled_memory_mb=8192,
        unbilled_cpu_percent=400,
        unbilled_disk_mb=40960,
    )
    account.refresh_from_db()
    actor = Actor(user=User.objects.get(email="ada@example.com"))
    for name in ["Survival SMP", "Creative SMP"]:
        server_create(account=account, actor=actor, **{**MINECRAFT, "name": name})
    run_worker()
    resting = [ServerStatus.RUNNING, ServerStatus.STOPPED, ServerStatus.SUSPENDED]
    for number in range(1, 29):
        ServerFactory(
            account=account,
            name=f"Lobby {number:02}",
            status=resting[number % 3],
            address=f"203.0.113.11:{30000 + number}",  # past the pool's ports
        )
    suspended = Server.objects.filter(account=account, status=ServerStatus.SUSPENDED).count()

    # Pages: 25 a page, and a hand-typed page that is not a number is page 1, said so.
    page.reload()
    pages = page.get_by_role("navigation", name="Pages")
    expect(pages).to_contain_text("Page 1 of 2 · 30 in total")
    expect(page.locator("#servers tbody tr")).to_have_count(25)
    pages.get_by_role("link", name="Next →").click()
    page.wait_for_url("/?page=2")
    expect(pages).to_contain_text("Page 2 of 2 · 30 in total")
    expect(page.locator("#servers tbody tr")).to_have_count(5)
    response = page.goto("/?page=abc")
    assert response.status == 200
    expect(page.locator("#list-notices")).to_have_text(
        "“abc” is not a page number: this is page 1."
    )
    expect(pages).to_contain_text("Page 1 of 2")

    # The search box.
    page.goto("/")
    search = page.get_by_role("searchbox", name="Name or ID")
    search.fill("smp")
    search.press("Enter")
    page.wait_for_url(re.compile(r"[?&]q=smp(&|$)"))  # the form sends its menus too
    assert sorted(server_names(page)) == ["Creative SMP", "Survival SMP"]
    for row in page.locator("#servers tbody tr").all():
        expect(row).to_contain_text("Stopped")
        expect(row.locator("td").nth(4)).to_have_text(re.compile(r"^\S+:\d+$"))  # the address
    screenshot("newcomer-servers-search")

    # A status filter, on its own.
    page.get_by_role("link", name="Clear").click()
    page.wait_for_url("/")
    page.select_option("select[name=status]", "suspended")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(r"[?&]status=suspended(&|$)"))
    rows = page.locator("#servers tbody tr")
    expect(rows).to_have_count(suspended)
    for row in rows.all():
        expect(row.locator(".badge")).to_have_text("Suspended")

    # Sorting by a column header, then the other way round.
    page.goto("/")
    header = page.get_by_role("columnheader", name="Name")
    header.get_by_role("link").click()
    page.wait_for_url("/?sort=name")
    expect(header).to_have_attribute("aria-sort", "ascending")
    assert server_names(page)[:3] == ["Creative SMP", "Lobby 01", "Lobby 02"]
    header.get_by_role("link").click()
    page.wait_for_url("/?sort=-name")
    expect(header).to_have_attribute("aria-sort", "descending")
    assert server_names(page)[:2] == ["Survival SMP", "Lobby 28"]
    screenshot("newcomer-servers-sorted")


def test_activity_names_what_changed_and_links_to_it(page, screenshot):
    owner, account = owner_of("Owner's Hosting")
    server = server_create(account=account, actor=Actor(user=owner), **MINECRAFT)
    run_worker()
    sign_in(page, owner)

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Activity").click()
    page.wait_for_url("/settings/activity")
    objects = page.locator("#activity tbody tr td:nth-child(3)")
    expect(objects.first).to_be_visible()
    shown = objects.all_inner_texts()
    assert any(text.startswith("Survival SMP") for text in shown), shown
    assert not [text for text in shown if re.search(r"\b[a-z]{3,4}_[0-9A-Za-z]{10,}", text)], shown
    screenshot("newcomer-activity")

    page.locator("#activity").get_by_role("link", name="Survival SMP").first.click()
    page.wait_for_url(f"/servers/{server.id}")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Survival SMP")


def test_staff_in_no_account_find_admin_and_stop_a_running_server_there(page, screenshot):
    staff = UserFactory(email="staff@hosting.test", is_staff=True, is_superuser=True)
    secret = give_second_factor(staff)  # staff need one for admin
    server = ServerFactory(name="Busy lobby", status=ServerStatus.RUNNING)
    sign_in(page, staff, secret)

    # No account of their own: their home is the staff home, not a page saying they lack one.
    expect(page).to_have_url(re.compile(r".*/staff$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Staff home")
    expect(page.locator("body")).not_to_contain_text("You are not a member of any account")
    menu = page.get_by_role("navigation", name="Main")
    expect(menu.get_by_role("link", name="Admin")).to_be_visible()
    expect(menu.get_by_role("link", name="Profile")).to_be_visible()
    for customer_menu in CUSTOMER_MENUS:
        expect(menu.get_by_role("link", name=customer_menu, exact=True)).to_have_count(0)
    screenshot("newcomer-staff-home")

    menu.get_by_role("link", name="Admin").click()
    page.wait_for_url("/admin/")
    expect(page).to_have_title(re.compile("Hosting Management"))
    expect(page.locator("#site-name")).to_have_text("Hosting Management · Staff")
    expect(page.locator("body")).not_to_contain_text("Django administration")
    expect(page.get_by_role("link", name="Webhook deliveries", exact=True)).to_be_visible()
    screenshot("newcomer-admin-index")

    page.goto(f"/admin/servers/server/{server.pk}/change/")
    lifecycle = page.locator("#lifecycle-actions")
    expect(lifecycle.get_by_role("heading")).to_have_text("Lifecycle · Running")
    expect(lifecycle.get_by_role("button", name="Stop", exact=True)).to_be_visible()
    lifecycle.get_by_role("button", name="Stop", exact=True).click()
    expect(page.locator(".messagelist .success")).to_have_text("Stopping 1 server.")
    expect(lifecycle.get_by_role("heading")).to_have_text("Lifecycle · Stopping")
    screenshot("newcomer-admin-stopped")


def test_a_webhook_endpoint_leads_with_its_summary_and_edits_events_by_resource(
    page, settings, screenshot
):
    # Lets the endpoint point at this machine; the delivery is never attempted (no worker runs).
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    owner, account = owner_of("Owner's Hosting")
    endpoint, _ = endpoint_create(
        account=account,
        url="http://127.0.0.1:9/hook",
        enabled_events=["bot.crashed"],
        description="Status page",
        actor=Actor(user=owner),
    )
    endpoint_send_test(endpoint=endpoint, actor=Actor(user=owner))
    sign_in(page, owner)

    page.goto("/settings/webhooks")
    page.get_by_role("link", name="http://127.0.0.1:9/hook").first.click()
    page.wait_for_url(f"/settings/webhooks/{endpoint.id}")
    heading = page.get_by_role("heading", level=1)
    expect(heading).to_contain_text("http://127.0.0.1:9/hook")
    expect(heading).to_contain_text("enabled")
    expect(page.locator("#webhook-events")).to_have_text("bot.crashed")
    expect(page.locator("#webhook-health")).to_contain_text("Failure streak")
    deliveries = page.locator("#deliveries tbody tr")
    expect(deliveries).to_have_count(1)
    expect(deliveries).to_contain_text("webhook.test")
    expect(deliveries.locator(".badge")).to_have_text("Pending")
    # Summary and deliveries are what the first screen shows, without scrolling.
    first_screen = page.viewport_size["height"]
    for section in ["Subscription", "Health", "Recent deliveries"]:
        box = page.get_by_role("heading", name=section, exact=True).bounding_box()
        assert box is not None and box["y"] + box["height"] <= first_screen, (section, box)
    screenshot("newcomer-webhook-detail")

    page.locator("#webhook-actions").get_by_role("link", name="Edit").click()
    page.wait_for_url(f"/settings/webhooks/{endpoint.id}/edit")
    expect(page.get_by_role("heading", level=1)).to_have_text("Edit webhook endpoint")
    groups = page.locator("fieldset.event-group > legend")
    # One group per area of the catalogue, in its order (it grows with each capability).
    expect(groups).to_have_text(list(EVENT_TYPES))
    # A resource's single types stay folded away unless one of them is ticked.
    expect(page.get_by_label("server.created", exact=True)).to_be_hidden()
    expect(page.get_by_label("bot.crashed", exact=True)).to_be_checked()
    page.get_by_label("All server events").check()
    screenshot("newcomer-webhook-edit")
    page.get_by_role("button", name="Save").click()

    page.wait_for_url(f"/settings/webhooks/{endpoint.id}")
    expect(page.get_by_role("status")).to_have_text("Saved the webhook endpoint.")
    expect(page.locator("#webhook-events li")).to_have_text(["bot.crashed", "server.*"])


def test_on_a_phone_keys_show_status_and_revoke_and_the_servers_page_reads_well(page, screenshot):
    owner, account = owner_of("Demo Hosting Co.")
    api_key_create(account=account, user=owner, name="CI deploys", scopes=["servers:read"])
    page.set_viewport_size(PHONE)
    sign_in(page, owner)

    # An account name ending in a full stop ends the sentence once.
    expect(page.locator(".page-header p.muted")).to_have_text(
        "The game servers of Demo Hosting Co."
    )
    expect(page).to_have_title("Servers · Hosting Management")
    assert ".." not in page.locator("main").inner_text()
    screenshot("newcomer-phone-servers")

    page.goto("/settings/api-keys")
    key = page.locator("#api-keys tbody tr", has_text="CI deploys")
    assert_within_width(key.get_by_text("active", exact=True), PHONE["width"])
    assert_within_width(key.get_by_role("link", name="Revoke"), PHONE["width"])
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot("newcomer-phone-api-keys")
    key.get_by_role("link", name="Revoke").click()
    expect(page.locator("#confirm-revoke")).to_be_visible()
