"""Billing → Payment methods in a real browser (Debian's chromium), as far as it goes here:
Stripe.js must come from js.stripe.com, which cannot be reached without internet, so the page
is driven up to that point (the cards listed, made default and removed; the card form saying
that card entry could not load). The server side of saving a card is
tests/stripe_gateway/test_pages.py."""

import pytest

from accounts.models import Account
from stripe_gateway.models import PaymentMethod
from tests.browser.conftest import sign_up
from tests.stripe_gateway.conftest import localstripe, stripe_api, stripe_on  # noqa: F401
from tests.stripe_gateway.helpers import save_card

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_the_payment_methods_page_up_to_stripe_js(page, live_server, stripe_api, screenshot):  # noqa: F811
    sign_up(
        page,
        live_server,
        name="Ada Lovelace",
        email="ada@example.com",
        account_name="Analytical Engines",
    )
    account = Account.objects.get(name="Analytical Engines")
    owner = account.memberships.get().user
    first = save_card(stripe_api, account, owner)
    second = save_card(stripe_api, account, owner, "5555555555554444")
    # No internet: js.stripe.com fails at once, as it would offline.
    page.route("https://js.stripe.com/**", lambda route: route.abort())

    page.goto("/billing")
    page.click("nav.tabs >> text=Payment methods")
    page.wait_for_selector("#payment-methods")
    assert "Visa •••• 4242" in page.inner_text(f"#method-{first.id}")
    assert "Default" in page.inner_text(f"#method-{first.id}")
    page.wait_for_function("document.getElementById('card-message').textContent.length > 0")
    assert "Card entry could not load" in page.inner_text("#card-message")
    screenshot("payment-methods")

    page.click(f"#method-{second.id} .make-default")
    page.wait_for_selector(f"#method-{second.id} >> text=Default")
    assert PaymentMethod.objects.get(pk=second.pk).is_default
    page.click(f"#method-{second.id} .remove-card")
    page.wait_for_selector(f"#method-{second.id}", state="detached")
    assert list(PaymentMethod.objects.filter(account=account)) == [first]
    assert "Default" in page.inner_text(f"#method-{first.id}")
