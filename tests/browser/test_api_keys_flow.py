"""The account holder's path through Settings → API Keys, in a real browser."""

import json
import re
import urllib.error
import urllib.request

import pytest

from tests.browser.conftest import sign_up

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def call_api(base_url: str, token: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{base_url}/v1/servers", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_sign_up_create_copy_use_and_revoke_a_key(page, live_server, screenshot):
    # Sign up: a user and their account, as owner.
    sign_up(
        page,
        live_server,
        name="Ada Lovelace",
        email="ada@example.com",
        account_name="Analytical Hosting",
    )

    # Create a key with one scope, expiring in 30 days.
    page.goto("/settings/api-keys/new")
    page.fill("[name=name]", "CI deploys")
    page.check("input[name=scopes][value='servers:read']")
    page.select_option("[name=expiry]", "30")
    page.click("#create-key")
    page.wait_for_url(re.compile(r".*/settings/api-keys/created$"))

    token = page.inner_text("#new-token").strip()
    assert re.fullmatch(r"hms_[0-9A-Za-z]{50}", token)
    page.click("#copy-token")
    assert page.evaluate("navigator.clipboard.readText()") == token
    assert page.inner_text("#copy-token").strip() == "Copied"
    screenshot("api-keys-created-once")

    # The copied token works against the API.
    status, body = call_api(live_server.url, token)
    assert status == 200
    assert body["success"] is True
    assert body["data"]["pagination"]["total"] == 0

    # A reload does not show the token again, and the list never shows it.
    page.reload()
    assert page.locator("#new-token").count() == 0
    page.goto("/settings/api-keys")
    table = page.locator("#api-keys")
    assert "CI deploys" in table.inner_text()
    assert token[:16] in table.inner_text()  # the hms_<key id> prefix
    assert token not in page.content()
    screenshot("api-keys-list")

    # Revoke, through the confirmation step.
    table.locator("tr", has_text="CI deploys").get_by_role("link", name="Revoke").click()
    page.wait_for_selector("#confirm-revoke")
    screenshot("api-keys-revoke-confirmation")
    page.click("#confirm-revoke")
    page.wait_for_url(re.compile(r".*/settings/api-keys$"))
    assert "revoked" in page.locator("#api-keys").inner_text().lower()

    status, body = call_api(live_server.url, token)
    assert status == 401
    assert body["error"]["code"] == "api_key_revoked"
