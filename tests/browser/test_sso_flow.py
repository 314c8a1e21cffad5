"""Single sign-on in real Chromium against the real OpenID Connect provider process: "Sign in
with …" on our sign-in page, the provider's own page, back signed in (linked by the host
provider's verified e-mail); then on a phone (390 px) Profile → Security → Single sign-on reads
without scrolling sideways, and unlinking asks for the password again."""

import pytest
from allauth.socialaccount.models import SocialAccount

from events.models import Event
from tests.browser.test_newcomer_walk import PHONE, assert_within_width
from tests.factories import MembershipFactory, UserFactory
from tests.sso.oidc_provider import oidc_provider, oidc_provider_session  # noqa: F401
from tests.sso.relying_party import PASSWORD, configure

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def idp(oidc_provider, live_server, monkeypatch, settings):  # noqa: F811
    client = oidc_provider.client
    oidc_provider.add_redirect_uri(f"{live_server.url}/auth/sso/oidc/login/callback/")
    configure(
        monkeypatch,
        settings,
        SSO_OIDC_SERVER_URL=oidc_provider.issuer,
        SSO_OIDC_CLIENT_ID=client.client_id,
        SSO_OIDC_CLIENT_SECRET=client.client_secret,
        SSO_OIDC_NAME="Example IdP",
    )
    return oidc_provider


def test_sign_in_with_the_provider_then_unlink_on_a_phone(page, idp, screenshot):
    ada = MembershipFactory(
        user=UserFactory(email="ada@idp.example.com", password=PASSWORD),
        account__name="Analytical Hosting",
    ).user

    page.set_viewport_size(PHONE)
    page.goto("/login")
    assert_within_width(page.get_by_role("button", name="Sign in with Example IdP"), PHONE["width"])
    screenshot("sso-sign-in-phone")
    page.get_by_role("button", name="Sign in with Example IdP").click()
    page.wait_for_url(f"{idp.issuer}/**")
    page.fill("[name=email]", "ada@idp.example.com")
    page.click("#op-sign-in")
    page.wait_for_url("/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Servers")
    assert SocialAccount.objects.get(user=ada).uid == "op-ada"
    [request] = idp.authorization_requests()
    assert request["code_challenge_method"] == "S256" and request["nonce"]

    page.goto("/settings/profile")
    page.get_by_role("link", name="Single sign-on").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Single sign-on")
    identity = page.locator(".sso-linked li")
    expect(identity).to_contain_text("Example IdP")
    assert_within_width(identity, PHONE["width"])
    assert_within_width(page.get_by_role("button", name="Link Example IdP"), PHONE["width"])
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot("sso-connections-phone")

    page.locator(".sso-linked input[type=radio]").check()
    page.get_by_role("button", name="Unlink").click()
    # Signed in with the provider, not a password just typed: unlinking asks for it.
    page.wait_for_url("**/auth/reauthenticate/**")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.fill("[name=password]", PASSWORD)
    page.get_by_role("button", name="Confirm").click()
    page.wait_for_url("**/auth/sso/connections/")
    expect(page.locator(".sso-linked")).to_have_count(0)
    assert not SocialAccount.objects.exists()
    assert Event.objects.filter(type="user.sso_unlinked").count() == 1


def test_a_tampered_id_token_leaves_the_browser_signed_out(page, idp):
    UserFactory(email="ada@idp.example.com", password=PASSWORD)
    idp.set_id_token_mode("wrong-key")

    page.goto("/login")
    page.get_by_role("button", name="Sign in with Example IdP").click()
    page.fill("[name=email]", "ada@idp.example.com")
    page.click("#op-sign-in")
    page.wait_for_url("/login")

    expect(page.locator(".messages")).to_contain_text("Sign-in with Example IdP failed")
    assert not SocialAccount.objects.exists()
    page.goto("/")
    page.wait_for_url("/login?next=/")


def test_staff_sign_in_to_admin_with_the_provider_and_their_factor(page, idp, settings, screenshot):
    from tests.browser.conftest import give_second_factor, type_second_factor

    settings.STAFF_SSO_ONLY = True
    staff = UserFactory(
        email="ada@idp.example.com", password=PASSWORD, is_staff=True, is_superuser=True
    )
    secret = give_second_factor(staff)

    page.set_viewport_size(PHONE)
    page.goto("/admin/")
    page.fill("[name=username]", staff.email)
    page.fill("[name=password]", PASSWORD)
    page.locator("#login-form [type=submit]").click()
    expect(page.locator("#content")).to_contain_text("Staff sign in with single sign-on only")
    button = page.get_by_role("button", name="Sign in with Example IdP")
    assert_within_width(button, PHONE["width"])
    screenshot("sso-admin-sign-in-phone")

    button.click()
    page.fill("[name=email]", "ada@idp.example.com")
    page.click("#op-sign-in")
    type_second_factor(page, secret)
    page.wait_for_url("**/admin/")
    expect(page.locator("#site-name")).to_contain_text("Hosting Management")
