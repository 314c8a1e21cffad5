"""A real headless Chromium (Debian's package) driven by Playwright, never a downloaded browser."""

import os
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"
# Without these, Chromium keeps trying to reach Google's services from a closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session", autouse=True)
def _live_server_over_plain_http():
    """The live server is built once per session, before per-test settings apply."""
    with override_settings(SECURE_SSL_REDIRECT=False):
        yield


@pytest.fixture(scope="session")
def browser(_live_server_over_plain_http):
    if not Path(CHROMIUM).exists():
        message = "Debian's chromium is not installed (apt-get install chromium)."
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    sync_api = pytest.importorskip("playwright.sync_api")
    # Playwright's sync API keeps an event loop running in this thread; the test's own database
    # calls are still synchronous, so Django's async-safety guard must stand aside.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


@pytest.fixture
def screenshot(page):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


def sign_up(page, live_server, *, name: str, email: str, account_name: str) -> None:
    """Sign up through /signup as a newcomer does (a user, and their account as owner), and
    land on the servers page."""
    page.goto("/signup")
    page.fill("[name=name]", name)
    page.fill("[name=email]", email)
    page.fill("[name=account_name]", account_name)
    page.fill("[name=password1]", "a-long-and-unusual-passphrase")
    page.fill("[name=password2]", "a-long-and-unusual-passphrase")
    page.locator("form").filter(has=page.locator("[name=account_name]")).locator(
        "[type=submit]"
    ).click()
    page.wait_for_url(f"{live_server.url}/")


def give_second_factor(user) -> str:
    """An authenticator app set up for ``user`` earlier (staff need one for admin, the desk and
    the staff pages): its secret, for ``type_second_factor``."""
    from allauth.mfa.totp.internal.auth import TOTP, generate_totp_secret

    secret = generate_totp_secret()
    TOTP.activate(user, secret)
    return secret


def type_second_factor(page, secret: str) -> None:
    """After the password: the authenticator app's code, as the person types it."""
    import time

    from allauth.mfa.totp.internal.auth import format_hotp_value, hotp_value

    page.wait_for_url("**/auth/2fa/authenticate/**")
    page.fill("[name=code]", format_hotp_value(hotp_value(secret, int(time.time()) // 30)))
    page.get_by_role("button", name="Sign In", exact=True).click()
