"""No dashboard page scrolls sideways on a phone (390 by 844): every page with a table or a card,
with content as long as customers' gets (a long server variable, a long environment value, a
long ticket subject), fits the screen. A table may scroll inside its card (``.table-wrap``);
the page itself may not, and no element reaches past the screen's edge unless a scrolling box
holds it."""

import re

import pytest

from accounts.actors import Actor
from accounts.roles import Role
from support.models import Department
from support.services.tickets import Requester, ticket_open
from tests.browser.conftest import give_second_factor, type_second_factor
from tests.factories import (
    BotFactory,
    InvoiceFactory,
    MembershipFactory,
    ServerFactory,
    SubscriptionFactory,
    UserFactory,
    WebhookEndpointFactory,
)

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PASSWORD = "correct-horse-battery"  # what tests.factories.UserFactory sets
PHONE = {"width": 390, "height": 844}
LONG_VALUE = "1.21.4-experimental-snapshot-with-a-very-long-name-" + "x" * 60

# The page's width, and the elements reaching past the screen's edge that no scrolling (or
# clipping) box of theirs holds: "tag#id.class (left → right)".
OVERFLOW = """() => {
  const width = window.innerWidth;
  const held = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      if (getComputedStyle(p).overflowX !== "visible") return true;
    }
    return false;
  };
  const wide = [];
  for (const el of document.body.querySelectorAll("*")) {
    const box = el.getBoundingClientRect();
    if (!box.width || !box.height) continue;
    if (box.right <= width + 0.5) continue;  // left of the screen (a skip link) widens nothing
    if (held(el)) continue;
    const style = getComputedStyle(el);
    if (style.visibility === "hidden" || style.position === "fixed") continue;
    const classes = typeof el.className === "string" ? el.className.trim() : "";
    wide.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
      (classes ? "." + classes.split(/\\s+/).join(".") : "") +
      " (" + Math.round(box.left) + " → " + Math.round(box.right) + ")");
  }
  const scrollWidth = document.documentElement.scrollWidth;
  return { scrollWidth: scrollWidth, innerWidth: width, wide: wide.slice(0, 8) };
}"""


def sign_in(page, user, secret: str | None = None) -> None:
    page.goto("/login")
    page.get_by_label("E-mail").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    if secret:
        type_second_factor(page, secret)
    page.wait_for_url(re.compile(r".*/(staff)?$"))  # staff with no account: their home


def fits(page, path: str, screenshot) -> list[str]:
    """The problems of ``path`` at phone width (none: it fits); its screenshot is kept."""
    answer = page.goto(path)
    assert answer is not None and answer.status == 200, (path, answer and answer.status)
    page.wait_for_load_state("load")
    page.wait_for_timeout(150)  # charts and scripts lay out after load
    found = page.evaluate(OVERFLOW)
    name = re.sub(r"[a-z]+_[A-Za-z0-9]{16,}", "id", path).replace("/", "-").rstrip("-")
    screenshot("phone-width" + name)
    problems = []
    if found["scrollWidth"] > found["innerWidth"]:
        problems.append(f"{path}: the page is {found['scrollWidth']} px wide")
    problems += [f"{path}: {element}" for element in found["wide"]]
    return problems


@pytest.fixture
def customer(account):
    user = MembershipFactory(
        account=account, role=Role.OWNER, user__name="Maximiliane Featherstonehaugh-Worthington"
    ).user
    server = ServerFactory(
        account=account,
        name="Survival SMP with a rather long name for a server",
        variables={"EULA": True, "VERSION": LONG_VALUE, "MAX_PLAYERS": "20"},
        address="203.0.113.10:25565",
    )
    bot = BotFactory(
        account=account,
        name="Moderation bot",
        environment={"A_RATHER_LONG_ENVIRONMENT_VARIABLE_NAME": LONG_VALUE},
    )
    SubscriptionFactory(account=account, server=server)
    invoice = InvoiceFactory(account=account, finalize=True)
    department = Department.objects.create(name="Technical", email="support@desk.example")
    ticket, _ = ticket_open(
        requester=Requester(email=user.email, name=user.name, user=user, account=account),
        subject="The server stops at 'Loading world' since the update " + "again " * 10,
        body="Since this morning's update: " + LONG_VALUE,
        department=department,
        channel="web",
        actor=Actor(user=user),
    )
    endpoint = WebhookEndpointFactory(
        account=account, url="https://hooks.example.com/in/" + "a" * 80
    )
    return {
        "user": user,
        "server": server,
        "bot": bot,
        "invoice": invoice,
        "ticket": ticket,
        "endpoint": endpoint,
        "department": department,
    }


def test_no_customer_page_scrolls_sideways_on_a_phone(page, customer, screenshot):
    server, bot = customer["server"].pk, customer["bot"].pk
    page.set_viewport_size(PHONE)
    sign_in(page, customer["user"])
    paths = [
        "/",
        f"/servers/{server}",
        f"/servers/{server}/edit",
        f"/servers/{server}/console",
        f"/servers/{server}/files",
        f"/servers/{server}/backups",
        f"/servers/{server}/schedules",
        f"/servers/{server}/schedules/new",
        f"/servers/{server}/databases",
        f"/servers/{server}/ports",
        f"/servers/{server}/users",
        f"/servers/{server}/activity",
        "/servers/new",
        "/bots",
        f"/bots/{bot}",
        f"/bots/{bot}/edit",
        "/billing",
        "/billing/invoices",
        f"/billing/invoices/{customer['invoice'].pk}",
        "/billing/payments",
        "/billing/subscriptions",
        "/billing/balance",
        "/billing/profile",
        "/billing/order",
        "/support",
        "/support/new",
        f"/support/{customer['ticket'].pk}",
        "/settings/team",
        "/settings/api-keys",
        "/settings/api-keys/new",
        "/settings/profile",
        "/settings/sftp",
        "/settings/activity",
        "/settings/webhooks",
        f"/settings/webhooks/{customer['endpoint'].pk}",
        "/overview",
    ]
    problems = [problem for path in paths for problem in fits(page, path, screenshot)]
    assert not problems, "\n".join(problems)


def test_no_staff_page_scrolls_sideways_on_a_phone(page, customer, screenshot):
    staff = UserFactory(email="agent@hosting.example", name="Alan Agent", is_staff=True)
    customer["department"].members.add(staff)
    secret = give_second_factor(staff)
    page.set_viewport_size(PHONE)
    sign_in(page, staff, secret)
    paths = ["/staff", "/desk", f"/desk/tickets/{customer['ticket'].pk}", "/staff/reports"]
    problems = [problem for path in paths for problem in fits(page, path, screenshot)]
    assert not problems, "\n".join(problems)


def test_the_variables_card_shows_a_long_value_whole_on_a_desktop(page, customer, screenshot):
    """The card holds the value (wrapped, never cut off or spilling out of the card)."""
    sign_in(page, customer["user"])
    page.goto(f"/servers/{customer['server'].pk}")
    card = page.locator("section").filter(has=page.locator("#variables"))
    value = page.locator("#variables dd code").filter(has_text="experimental")
    expect(value).to_have_text(LONG_VALUE)
    card_box, value_box = card.bounding_box(), value.bounding_box()
    assert card_box is not None and value_box is not None
    assert value_box["x"] + value_box["width"] <= card_box["x"] + card_box["width"], (
        card_box,
        value_box,
    )
    # Its whole text is on the screen: not clipped by the card.
    assert value.evaluate("el => el.scrollWidth <= el.clientWidth + 1")
    screenshot("variables-card-desktop")
