"""Profile → SSH keys & SFTP, and the SFTP details on a server's Files tab."""

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from django.contrib.auth.hashers import check_password
from django.core.cache import cache

from accounts.actors import SYSTEM
from accounts.models import SshKey, User
from accounts.roles import Role
from accounts.services import account_suspend, sftp_login_change, ssh_key_create
from events.models import Event
from servers import views as server_views
from servers.services import sftp as sftp_service
from tests.dashboard import messages_of, signed_in
from tests.dashboard.test_console_pages import placed  # noqa: F401 - the fixture
from tests.factories import MembershipFactory

pytestmark = pytest.mark.django_db
PAGE = "/settings/sftp"


def key_line(comment: str = "sam@laptop") -> str:
    public = ed25519.Ed25519PrivateKey.generate().public_key()
    line = public.public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    ).decode()
    return f"{line} {comment}"


def errors_of(response, form: str, field: str) -> list[str]:
    return list(response.context[form].errors.get(field, []))


def test_the_page_shows_the_login_and_no_keys_yet(owner):
    owner.email = "sam.rivera@example.com"
    owner.save()
    page = signed_in(owner).get(PAGE)
    assert page.status_code == 200
    html = page.content.decode()
    assert "<code>sam.rivera.&lt;server short id&gt;</code>" in html
    assert "No SSH keys yet." in html
    assert "No SFTP password" in html
    assert 'href="/settings/sftp" aria-current="page"' in html


def test_adding_a_key_by_pasting_it(owner, account):
    client = signed_in(owner)
    line = key_line()
    response = client.post(PAGE, {"task": "add_key", "add_key-public_key": line}, follow=True)
    ssh_key = SshKey.objects.get(user=owner)
    assert ssh_key.name == "sam@laptop"
    assert messages_of(response) == [
        f"The key “sam@laptop” ({ssh_key.fingerprint}) has been added."
    ]
    html = response.content.decode()
    assert f'<code class="fingerprint">{ssh_key.fingerprint}</code>' in html
    assert Event.objects.filter(type="ssh_key.created", account=account).count() == 1


def test_a_bad_or_weak_or_repeated_key_is_shown_on_the_form(owner):
    client = signed_in(owner)
    bad = client.post(PAGE, {"task": "add_key", "add_key-public_key": "hello"})
    assert bad.status_code == 200
    assert errors_of(bad, "add_key", "public_key") == ["This is not an SSH public key."]
    weak_key = rsa.generate_private_key(public_exponent=65537, key_size=1024)  # noqa: S505
    weak = weak_key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    refused = client.post(PAGE, {"task": "add_key", "add_key-public_key": weak.decode()})
    assert "at least 2048 are needed" in errors_of(refused, "add_key", "public_key")[0]
    line = key_line()
    client.post(PAGE, {"task": "add_key", "add_key-public_key": line})
    again = client.post(PAGE, {"task": "add_key", "add_key-public_key": line})
    assert errors_of(again, "add_key", "public_key")[0].startswith("You have already added")
    assert SshKey.objects.filter(user=owner).count() == 1


def test_deleting_a_key_asks_first(owner):
    ssh_key = ssh_key_create(user=owner, name="laptop", public_key=key_line(), actor=SYSTEM)
    client = signed_in(owner)
    confirm = client.get(f"/settings/sftp/keys/{ssh_key.id}/delete")
    assert confirm.status_code == 200
    assert ssh_key.fingerprint in confirm.content.decode()
    assert SshKey.objects.filter(pk=ssh_key.pk).exists()
    done = client.post(f"/settings/sftp/keys/{ssh_key.id}/delete", follow=True)
    assert not SshKey.objects.filter(pk=ssh_key.pk).exists()
    assert "has been deleted" in messages_of(done)[0]


def test_another_users_key_is_404(owner, teammate):
    theirs = ssh_key_create(user=teammate, name="theirs", public_key=key_line(), actor=SYSTEM)
    client = signed_in(owner)
    assert client.get(f"/settings/sftp/keys/{theirs.id}/delete").status_code == 404
    assert client.post(f"/settings/sftp/keys/{theirs.id}/delete").status_code == 404
    assert SshKey.objects.filter(pk=theirs.pk).exists()


def test_setting_and_removing_the_sftp_password(owner):
    client = signed_in(owner)
    differ = client.post(
        PAGE,
        {"task": "password", "password-password": "a-long-passphrase", "password-confirm": "x"},
    )
    assert errors_of(differ, "password", "confirm") == ["The two passwords differ."]
    weak = client.post(
        PAGE, {"task": "password", "password-password": "short", "password-confirm": "short"}
    )
    assert "too short" in errors_of(weak, "password", "password")[0]
    done = client.post(
        PAGE,
        {
            "task": "password",
            "password-password": "a-long-passphrase",
            "password-confirm": "a-long-passphrase",
        },
        follow=True,
    )
    assert messages_of(done) == ["Your SFTP password has been set."]
    assert check_password("a-long-passphrase", User.objects.get(pk=owner.pk).sftp_password)
    assert "a-long-passphrase" not in done.content.decode()
    assert "Remove the SFTP password" in done.content.decode()
    removed = client.post(PAGE, {"task": "remove_password"}, follow=True)
    assert messages_of(removed) == ["Your SFTP password has been removed."]
    assert User.objects.get(pk=owner.pk).sftp_password == ""


def test_changing_the_login(owner, teammate):
    sftp_login_change(user=teammate, login="taken", actor=SYSTEM)
    client = signed_in(owner)
    refused = client.post(PAGE, {"task": "login", "login-sftp_login": "taken"})
    assert errors_of(refused, "login", "sftp_login") == ["Another user has this SFTP login."]
    invalid = client.post(PAGE, {"task": "login", "login-sftp_login": "Not Valid"})
    assert errors_of(invalid, "login", "sftp_login")[0].startswith("An SFTP login has 3 to 32")
    done = client.post(PAGE, {"task": "login", "login-sftp_login": "sam-r"}, follow=True)
    assert messages_of(done) == ["Your SFTP login is now “sam-r”."]
    assert User.objects.get(pk=owner.pk).sftp_login == "sam-r"


def test_the_page_needs_a_signed_in_user(client):
    response = client.get(PAGE)
    assert response.status_code == 302 and response["Location"].startswith("/login")


@pytest.fixture
def node_serving_sftp(monkeypatch):
    """The node's agent answers GET /api/system with an SFTP address; the folder is empty."""
    cache.clear()
    system = {"sftp": {"listen": "0.0.0.0:2022", "host_key_fingerprint": "SHA256:hostkey"}}
    monkeypatch.setattr(sftp_service, "agent_request", lambda *args, **kwargs: (200, system, {}))
    listing = {"path": "/", "entries": [], "total": 0}
    monkeypatch.setattr(server_views.files, "file_call", lambda *args, **kwargs: (listing, {}))
    yield
    cache.clear()


@pytest.mark.parametrize("role", [Role.OWNER, Role.DEVELOPER, Role.SUPPORT])
def test_the_files_tab_shows_how_to_connect_with_sftp(
    account,
    placed,  # noqa: F811
    node_serving_sftp,
    role,
):
    user = MembershipFactory(account=account, role=role).user
    sftp_login_change(user=user, login="sam", actor=SYSTEM)
    html = signed_in(user).get(f"/servers/{placed.id}/files").content.decode()
    short = placed.id[4:12]
    # A wildcard listen address is served on the host the agent is reached at.
    assert '<code id="sftp-host">127.0.0.1</code>' in html
    assert '<code id="sftp-port">2022</code>' in html
    assert f'<code id="sftp-username">sam.{short}</code>' in html
    assert f'<code id="sftp-command">sftp -P 2022 sam.{short}@127.0.0.1</code>' in html
    assert 'data-copy-target="sftp-command"' in html
    assert "SHA256:hostkey" in html
    assert ("not change them" in html) is (role == Role.SUPPORT)


def test_a_node_without_sftp_shows_no_details(
    owner,
    placed,  # noqa: F811
    monkeypatch,
):
    cache.clear()
    monkeypatch.setattr(
        sftp_service, "agent_request", lambda *args, **kwargs: (200, {"sftp": None}, {})
    )
    listing = {"path": "/", "entries": [], "total": 0}
    monkeypatch.setattr(server_views.files, "file_call", lambda *args, **kwargs: (listing, {}))
    html = signed_in(owner).get(f"/servers/{placed.id}/files").content.decode()
    assert "sftp-details" not in html
    cache.clear()


def test_an_explicit_listen_address_is_shown_as_it_is(owner, placed, monkeypatch):  # noqa: F811
    cache.clear()
    system = {"sftp": {"listen": "[2001:db8::5]:2222", "host_key_fingerprint": "SHA256:k"}}
    monkeypatch.setattr(sftp_service, "agent_request", lambda *args, **kwargs: (200, system, {}))
    connection = sftp_service.sftp_connection(instance=placed, user=owner)
    assert connection is not None
    assert connection["host"] == "2001:db8::5" and connection["port"] == 2222
    assert connection["command"].endswith("@[2001:db8::5]")
    cache.clear()


def test_no_details_where_sftp_would_refuse_the_user(
    owner,
    account,
    placed,  # noqa: F811
    node_serving_sftp,
):
    account_suspend(account=account, reason="unpaid", actor=SYSTEM)
    html = signed_in(owner).get(f"/servers/{placed.id}/files").content.decode()
    assert "sftp-details" not in html
