"""The dashboard in the customer's language (issue 34 item 15), in a real browser: the browser's
language by default, the sign-in page's picker, Profile's choice kept across sessions, dates and
money by locale, the scripts' own strings, at desktop and phone width; the API stays English."""

import re

import pytest
from playwright.sync_api import expect

from tests.factories import MembershipFactory, PriceFactory, ServerFactory, SubscriptionFactory

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)
PHONE = {"width": 390, "height": 844}
PASSWORD = "correct-horse-battery"  # what tests.factories.UserFactory sets


@pytest.fixture
def french_browser(browser, live_server):
    """A browser whose person reads French (Accept-Language: fr)."""
    context = browser.new_context(
        base_url=live_server.url, locale="fr-FR", viewport={"width": 1280, "height": 900}
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


@pytest.fixture
def customer(db):
    membership = MembershipFactory(account__name="Blocky Worlds")
    server = ServerFactory(account=membership.account, name="Survival SMP")
    price = PriceFactory(product__name="Minecraft 4 GB", unit_amount=123456)
    SubscriptionFactory(account=membership.account, price=price, server=server)
    return membership.user, server


def sign_in(page, user, *, password_label: str, button: str) -> None:
    page.goto("/login")
    page.get_by_label(password_label).fill(PASSWORD)
    page.locator("[name=username]").fill(user.email)
    page.get_by_role("button", name=button, exact=True).click()


def test_a_french_browser_gets_french_pages_dates_and_money(french_browser, customer, screenshot):
    page = french_browser
    owner, server = customer
    page.goto("/login")
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    expect(page.get_by_role("heading", level=1)).to_have_text("Se connecter")
    expect(page.locator("#language-picker")).to_have_value("fr")
    screenshot("language-fr-browser-login")
    sign_in(page, owner, password_label="Mot de passe", button="Se connecter")
    page.wait_for_url(re.compile(r".*/$"))
    expect(page.get_by_role("navigation").first).to_contain_text("Serveurs")

    for viewport, name in (({"width": 1280, "height": 900}, "desktop"), (PHONE, "phone")):
        page.set_viewport_size(viewport)
        page.goto(f"/servers/{server.id}")
        price = page.locator("#plan-price")
        expect(price).to_contain_text("1\u00a0234,56\u00a0EUR")  # the French separators
        renews = page.locator("#plan-renews").inner_text()
        assert re.search(r"\d{1,2} \w+ \d{4}|\d{2}/\d{2}/\d{4}", renews), renews
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        screenshot(f"language-fr-server-{name}")

    # The scripts' strings come from the catalogue in the page's language.
    assert page.evaluate("gettext('Connected')") not in ("", "Connected")

    # The API stays English whatever the browser says.
    german = page.request.get("/v1/servers", headers={"Accept-Language": "de"})
    english = page.request.get("/v1/servers", headers={"Accept-Language": "en"})
    assert german.status == english.status == 401
    assert german.json()["error"]["message"] == english.json()["error"]["message"]
    assert "accept-language" not in german.headers.get("vary", "").lower()


def test_the_picker_and_profile_choose_the_language_and_it_stays(page, customer, screenshot):
    owner, server = customer
    page.goto("/login")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    page.locator("#language-picker").select_option("fr")
    page.wait_for_load_state()
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    expect(page.get_by_label("E-mail", exact=False).first).to_be_visible()
    screenshot("language-fr-login")

    page.locator("[name=username]").fill(owner.email)
    page.locator("[name=password]").fill(PASSWORD)
    page.locator("form [type=submit]").first.click()
    page.wait_for_url(re.compile(r".*/$"))
    expect(page.locator("html")).to_have_attribute("lang", "fr")

    page.goto("/settings/profile")
    page.locator("[name=language]").select_option("es")
    page.locator("form[action='/settings/profile'] [type=submit]").click()
    page.wait_for_url(re.compile(r".*/settings/profile$"))
    expect(page.locator("html")).to_have_attribute("lang", "es")
    expect(page.locator("[name=language]")).to_have_value("es")
    owner.refresh_from_db()
    assert owner.language == "es"

    # A new browser with another language: the person's choice wins once signed in.
    page.context.clear_cookies()
    page.goto("/login")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    page.locator("[name=username]").fill(owner.email)
    page.locator("[name=password]").fill(PASSWORD)
    page.locator("form [type=submit]").first.click()
    page.wait_for_url(re.compile(r".*/$"))
    expect(page.locator("html")).to_have_attribute("lang", "es")
    page.goto(f"/servers/{server.id}")
    expect(page.locator("#plan-price")).to_contain_text("1\u00a0234,56\u00a0EUR")
    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot("language-es-server-phone")
