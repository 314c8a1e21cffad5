"""Django admin: users' SSH keys (found and revoked through the service) and SFTP logins."""

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from accounts.actors import SYSTEM
from accounts.models import SshKey, User
from accounts.services import sftp_login_change, ssh_key_create
from events.models import Event
from tests.accounts.test_admin import admin_url

pytestmark = pytest.mark.django_db


def key_line() -> str:
    public = ed25519.Ed25519PrivateKey.generate().public_key()
    return public.public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    ).decode()


@pytest.fixture
def ssh_key(owner) -> SshKey:
    sftp_login_change(user=owner, login="alice", actor=SYSTEM)
    return ssh_key_create(user=owner, name="laptop", public_key=key_line(), actor=SYSTEM)


def test_staff_find_a_key_by_fingerprint_or_login(staff_client, ssh_key, teammate):
    ssh_key_create(user=teammate, name="other", public_key=key_line(), actor=SYSTEM)
    listing = admin_url(SshKey, "changelist")
    for term in (ssh_key.fingerprint, "alice"):
        page = staff_client.get(listing, {"q": term}).content.decode()
        assert ssh_key.fingerprint in page
        assert "other" not in page
    detail = staff_client.get(admin_url(SshKey, "change", ssh_key.pk))
    assert detail.status_code == 200
    assert 'name="_save"' not in detail.content.decode()  # view-only


def test_staff_revoke_a_key_through_the_service(staff_client, ssh_key, account):
    response = staff_client.post(
        admin_url(SshKey, "changelist"),
        {"action": "revoke_ssh_keys", "_selected_action": [ssh_key.pk]},
        follow=True,
    )
    assert "Revoked 1 SSH key." in response.content.decode()
    assert not SshKey.objects.filter(pk=ssh_key.pk).exists()
    assert Event.objects.get(type="ssh_key.deleted").account_id == account.id


def test_keys_are_not_added_or_deleted_past_the_service(staff_client, ssh_key):
    assert staff_client.get(admin_url(SshKey, "add")).status_code == 403
    assert staff_client.get(admin_url(SshKey, "delete", ssh_key.pk)).status_code == 403


def test_a_users_page_shows_their_sftp_login_and_keys(staff_client, owner, ssh_key):
    page = staff_client.get(admin_url(User, "change", owner.pk)).content.decode()
    assert "alice" in page and "1 SSH keys" in page
    listing = staff_client.get(admin_url(User, "changelist")).content.decode()
    assert "alice" in listing
