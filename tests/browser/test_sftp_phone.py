"""Profile → SSH keys & SFTP on a phone (390 px): a key pasted in, its fingerprint shown without
scrolling sideways, deleted after a confirmation; an SFTP password set and removed."""

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from accounts.models import SshKey, User
from tests.browser.test_newcomer_walk import PHONE, assert_within_width, owner_of, sign_in

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def rsa_line() -> str:
    """A 4,096-bit RSA key: the longest line a person is likely to paste."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=4096).public_key()
    line = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return line.decode() + " sam@a-rather-long-laptop-name.example.com"


def test_on_a_phone_a_key_is_added_shown_and_deleted(page, screenshot):
    owner, _ = owner_of("Phone Hosting")
    page.set_viewport_size(PHONE)
    sign_in(page, owner)
    page.goto("/settings/sftp")
    page.fill("[name=add_key-public_key]", rsa_line())
    page.click("#add-key")
    key = SshKey.objects.get(user=owner)
    expect(page.locator(".messages")).to_contain_text(key.fingerprint)
    fingerprint = page.locator("#ssh-keys code.fingerprint")
    expect(fingerprint).to_have_text(key.fingerprint)
    assert_within_width(fingerprint, PHONE["width"])
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot("sftp-keys-phone")

    page.fill("[name=password-password]", "a-long-sftp-passphrase")
    page.fill("[name=password-confirm]", "a-long-sftp-passphrase")
    page.click("#set-password")
    expect(page.locator("#remove-password")).to_be_visible()
    assert User.objects.get(pk=owner.pk).sftp_password
    page.click("#remove-password")
    expect(page.locator("#remove-password")).to_have_count(0)

    page.get_by_role("link", name="Delete").click()
    expect(page.locator("h1")).to_contain_text("Delete")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.click("#confirm-delete")
    expect(page.locator("#ssh-keys")).to_have_count(0)
    assert not SshKey.objects.exists()
