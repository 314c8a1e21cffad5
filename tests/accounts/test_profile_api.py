"""/v1/profile, /v1/profile/ssh-keys and /v1/profile/sftp-password: a user's own SFTP
credentials through the API (keys with the profile scopes reach their own user only)."""

import base64
import hashlib
import shutil
import subprocess

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa
from django.contrib.auth.hashers import check_password
from rest_framework.test import APIClient

from accounts.api.serializers import ProfileSerializer, SshKeySerializer
from accounts.models import SshKey, User
from accounts.roles import Role
from accounts.services import sftp
from events.models import Event
from tests.api.test_representations import assert_same
from tests.conftest import auth_queries
from tests.envelopes import error_of, field_errors
from tests.factories import MembershipFactory, UserFactory
from tests.test_openapi import validator_for

KEYS = "/v1/profile/ssh-keys"
PROFILE = "/v1/profile"
PASSWORD = "/v1/profile/sftp-password"
PROFILE_SCOPES = ["profile:write"]


def public_line(private, comment: str = "") -> str:
    line = (
        private.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )
    return f"{line} {comment}".strip()


def ed25519_line(comment: str = "") -> str:
    return public_line(ed25519.Ed25519PrivateKey.generate(), comment)


def openssh_fingerprint(line: str) -> str:
    blob = base64.b64decode(line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


@pytest.fixture
def me_api(owner, account, make_token, client_for):
    return client_for(make_token(owner, account, PROFILE_SCOPES))


# --- SSH keys -----------------------------------------------------------------------------


def test_a_user_adds_an_ed25519_key_and_sees_it_as_openssh_does(me_api, owner, account):
    line = ed25519_line("sam@laptop")
    response = me_api.post(KEYS, {"public_key": line}, format="json")
    assert response.status_code == 201, response.content
    key = response.json()["data"]["ssh_key"]
    assert key["id"].startswith("sshk_")
    assert response["Location"].endswith(f"{KEYS}/{key['id']}")
    assert key == {
        "id": key["id"],
        "name": "sam@laptop",  # the comment, when no name is given
        "type": "ssh-ed25519",
        "bits": 256,
        "fingerprint": openssh_fingerprint(line),
        "public_key": line.rsplit(" ", 1)[0],
        "user": owner.id,
        "created_at": key["created_at"],
        "last_used_at": None,
    }
    event = Event.objects.get(type="ssh_key.created")
    assert event.account_id == account.id
    assert event.data["object"]["fingerprint"] == key["fingerprint"]


def test_ecdsa_and_rsa_keys_are_accepted_with_their_sizes(me_api):
    ecdsa = public_line(ec.generate_private_key(ec.SECP384R1()))
    rsa_key = public_line(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    first = me_api.post(KEYS, {"name": "ec", "public_key": ecdsa}, format="json")
    second = me_api.post(KEYS, {"name": "rsa", "public_key": rsa_key}, format="json")
    assert first.json()["data"]["ssh_key"]["type"] == "ecdsa-sha2-nistp384"
    assert first.json()["data"]["ssh_key"]["bits"] == 384
    assert second.json()["data"]["ssh_key"]["type"] == "ssh-rsa"
    assert second.json()["data"]["ssh_key"]["bits"] == 2048


def test_the_fingerprint_is_the_one_ssh_keygen_prints(me_api, tmp_path):
    keygen = shutil.which("ssh-keygen")
    if keygen is None:
        pytest.skip("ssh-keygen is not installed")
    line = ed25519_line("x@y")
    (tmp_path / "k.pub").write_text(line + "\n")
    printed = subprocess.run(  # noqa: S603 - our own arguments
        [keygen, "-l", "-E", "sha256", "-f", str(tmp_path / "k.pub")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[1]
    response = me_api.post(KEYS, {"public_key": line}, format="json")
    assert response.json()["data"]["ssh_key"]["fingerprint"] == printed


@pytest.mark.parametrize(
    ("public_key", "code"),
    [
        ("not a key", "invalid"),
        ("ssh-ed25519 AAAAnotbase64!!", "invalid"),
        ("ssh-ed25519", "invalid"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", "private_key"),
        ("ssh-dss AAAAB3NzaC1kc3MAAACBAP", "invalid"),
        ("ssh-ed25519 AAAA\nssh-ed25519 AAAA", "invalid"),
        ("   ", "blank"),
    ],
)
def test_what_is_not_a_public_key_is_refused_on_its_field(me_api, public_key, code):
    response = me_api.post(KEYS, {"public_key": public_key}, format="json")
    assert field_errors(response) == [("public_key", code)]
    assert not SshKey.objects.exists()


def test_a_dsa_key_is_refused_as_unsupported(me_api):
    dsa_key = public_line(dsa.generate_private_key(key_size=1024))  # noqa: S505 - refused
    response = me_api.post(KEYS, {"public_key": dsa_key}, format="json")
    assert field_errors(response) == [("public_key", "unsupported_type")]


def test_an_rsa_key_under_2048_bits_is_refused_as_weak(me_api):
    weak = public_line(rsa.generate_private_key(public_exponent=65537, key_size=1024))  # noqa: S505
    response = me_api.post(KEYS, {"public_key": weak}, format="json")
    assert field_errors(response) == [("public_key", "weak_key")]
    assert "1024 bits" in error_of(response, 400)["message"]


def test_the_same_key_twice_is_refused_but_another_user_may_add_it(
    me_api, teammate, account, make_token, client_for
):
    line = ed25519_line()
    assert me_api.post(KEYS, {"public_key": line}, format="json").status_code == 201
    again = me_api.post(KEYS, {"public_key": line + " other-comment"}, format="json")
    assert field_errors(again) == [("public_key", "duplicate")]
    teammate_api = client_for(make_token(teammate, account, PROFILE_SCOPES))
    assert teammate_api.post(KEYS, {"public_key": line}, format="json").status_code == 201
    assert SshKey.objects.count() == 2


def test_unknown_fields_and_long_names_are_refused(me_api):
    line = ed25519_line()
    assert field_errors(me_api.post(KEYS, {"public_key": line, "user": "x"}, format="json")) == [
        ("user", "unknown_field")
    ]
    long_name = me_api.post(KEYS, {"public_key": line, "name": "n" * 101}, format="json")
    assert field_errors(long_name) == [("name", "max_length")]


def test_a_user_sees_only_their_own_keys_and_another_users_key_is_404(
    me_api, owner, teammate, outsider, account, make_token, client_for
):
    mine = me_api.post(KEYS, {"public_key": ed25519_line()}, format="json").json()["data"]
    teammate_api = client_for(make_token(teammate, account, PROFILE_SCOPES))
    theirs = teammate_api.post(KEYS, {"public_key": ed25519_line()}, format="json").json()
    their_id = theirs["data"]["ssh_key"]["id"]
    listed = me_api.get(KEYS).json()["data"]
    assert [key["id"] for key in listed["ssh_keys"]] == [mine["ssh_key"]["id"]]
    assert listed["pagination"]["total"] == 1
    error_of(me_api.get(f"{KEYS}/{their_id}"), 404, "not_found")
    error_of(me_api.delete(f"{KEYS}/{their_id}"), 404, "not_found")
    assert SshKey.objects.filter(pk=their_id).exists()
    # The owner of the account sees no teammate's key either: keys are the user's own.
    outsider_key = SshKey.objects.create(
        user=outsider, name="x", key_type="ssh-ed25519", bits=256, public_key="x", fingerprint="f"
    )
    error_of(me_api.get(f"{KEYS}/{outsider_key.id}"), 404, "not_found")


def test_deleting_a_key_removes_it_and_records_it(me_api, account):
    key = me_api.post(KEYS, {"public_key": ed25519_line()}, format="json").json()["data"]
    key_id = key["ssh_key"]["id"]
    response = me_api.delete(f"{KEYS}/{key_id}")
    assert response.status_code == 200
    assert response.json()["data"] == {"id": key_id, "deleted": True}
    assert not SshKey.objects.filter(pk=key_id).exists()
    assert Event.objects.get(type="ssh_key.deleted").data["object"]["id"] == key_id
    error_of(me_api.get(f"{KEYS}/{key_id}"), 404, "not_found")


def test_the_key_limit_is_quota_exceeded(me_api, owner, monkeypatch):
    monkeypatch.setattr(sftp, "MAX_SSH_KEYS_PER_USER", 1)
    assert me_api.post(KEYS, {"public_key": ed25519_line()}, format="json").status_code == 201
    error = error_of(me_api.post(KEYS, {"public_key": ed25519_line()}, format="json"), 422)
    assert error["code"] == "quota_exceeded" and error["details"] == {"limit": 1}


def test_keys_and_the_profile_are_shown_as_declared(me_api, owner):
    me_api.post(KEYS, {"public_key": ed25519_line()}, format="json")
    ssh_key = SshKey.objects.get(user=owner)
    SshKey.objects.filter(pk=ssh_key.pk).update(last_used_at=ssh_key.created_at)
    ssh_key.refresh_from_db()
    assert_same(SshKeySerializer, ssh_key)
    me_api.put(PASSWORD, {"password": "a-long-sftp-passphrase"}, format="json")
    owner.refresh_from_db()
    assert_same(ProfileSerializer, owner)


def test_the_list_costs_a_fixed_number_of_queries(me_api, owner, django_assert_max_num_queries):
    for _ in range(5):
        me_api.post(KEYS, {"public_key": ed25519_line()}, format="json")
    with django_assert_max_num_queries(2 + auth_queries()):
        response = me_api.get(KEYS)
    assert len(response.json()["data"]["ssh_keys"]) == 5


def test_keys_need_the_profile_scopes(owner, account, make_token, client_for):
    reader = client_for(make_token(owner, account, ["profile:read"]))
    other = client_for(make_token(owner, account, ["servers:write", "api_keys:write"]))
    assert reader.get(KEYS).status_code == 200
    error = error_of(reader.post(KEYS, {"public_key": ed25519_line()}, format="json"), 403)
    assert error["code"] == "insufficient_scope"
    assert error["details"]["required_scopes"] == ["profile:write"]
    error_of(other.get(KEYS), 403, "insufficient_scope")
    error_of(other.get(PROFILE), 403, "insufficient_scope")


@pytest.mark.parametrize("role", list(Role))
def test_every_role_may_manage_its_own_profile(role, account, make_token, client_for):
    user = MembershipFactory(account=account, role=role).user
    api = client_for(make_token(user, account, PROFILE_SCOPES))
    assert api.post(KEYS, {"public_key": ed25519_line()}, format="json").status_code == 201
    assert (
        api.put(PASSWORD, {"password": "a-long-sftp-passphrase"}, format="json").status_code == 200
    )


def test_ssh_key_answers_match_the_schema(me_api):
    openapi = APIClient().get("/v1/openapi.json").json()
    created = me_api.post(KEYS, {"public_key": ed25519_line()}, format="json")
    key_id = created.json()["data"]["ssh_key"]["id"]
    for path, method, status, response in [
        (KEYS, "post", "201", created),
        (KEYS, "get", "200", me_api.get(KEYS)),
        (f"{KEYS}/{{id}}", "get", "200", me_api.get(f"{KEYS}/{key_id}")),
        (PROFILE, "get", "200", me_api.get(PROFILE)),
    ]:
        schema = ("paths", path, method, "responses", status, "content", "application/json")
        validator_for(openapi, *schema, "schema").validate(response.json())


# --- The profile: SFTP login and password --------------------------------------------------


def test_the_login_comes_from_the_email_once_and_stays(me_api, owner):
    owner.email = "Sam.Rivera+games@example.com"
    owner.save()
    profile = me_api.get(PROFILE).json()["data"]["profile"]
    assert profile == {
        "id": owner.id,
        "email": owner.email,
        "name": owner.name,
        "sftp_login": "sam.rivera",
        "sftp_password_set": False,
        "sftp_password_set_at": None,
    }
    owner.refresh_from_db()
    owner.email = "someone@example.com"
    owner.save()
    assert me_api.get(PROFILE).json()["data"]["profile"]["sftp_login"] == "sam.rivera"


def test_a_login_another_user_has_gets_a_number(db, me_api, owner):
    UserFactory(email="sam@elsewhere.test", sftp_login="sam")
    owner.email = "sam@example.com"
    owner.save()
    assert me_api.get(PROFILE).json()["data"]["profile"]["sftp_login"] == "sam2"


@pytest.mark.parametrize(
    ("email", "login"),
    [("a@example.com", "auser"), ("--x--@example.com", "xuser"), ("Zoë_K@example.com", "zo_k")],
)
def test_odd_local_parts_still_give_a_valid_login(db, email, login):
    user = UserFactory(email=email)
    assert sftp.sftp_login_of(user) == login
    assert sftp.LOGIN_PATTERN.match(login)


def test_a_user_changes_their_login_within_the_rules(me_api, owner, account):
    response = me_api.patch(PROFILE, {"sftp_login": "sam.r-2_x"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["data"]["profile"]["sftp_login"] == "sam.r-2_x"
    owner.refresh_from_db()
    assert owner.sftp_login == "sam.r-2_x"
    event = Event.objects.get(type="user.sftp_login_changed")
    assert event.data["object"]["sftp_login"] == "sam.r-2_x"


@pytest.mark.parametrize(
    "login", ["Sam", "ab", "a" * 33, "sam.", ".sam", "sam@x", "sam x", "-sam", "sämi", ""]
)
def test_a_login_outside_the_rules_is_refused(me_api, login):
    assert field_errors(me_api.patch(PROFILE, {"sftp_login": login}, format="json")) == [
        ("sftp_login", "invalid" if login and len(login) <= 32 else field_code(login))
    ]


def field_code(login: str) -> str:
    return "blank" if not login else "max_length"


def test_a_login_another_user_has_is_refused(db, me_api):
    UserFactory(sftp_login="taken")
    assert field_errors(me_api.patch(PROFILE, {"sftp_login": "taken"}, format="json")) == [
        ("sftp_login", "unique")
    ]


def test_the_profile_refuses_other_fields(me_api):
    assert field_errors(me_api.patch(PROFILE, {"email": "x@example.com"}, format="json")) == [
        ("email", "unknown_field")
    ]


def test_setting_the_sftp_password_keeps_only_a_hash(me_api, owner, account):
    response = me_api.put(PASSWORD, {"password": "a-long-sftp-passphrase"}, format="json")
    assert response.status_code == 200, response.content
    profile = response.json()["data"]["profile"]
    assert profile["sftp_password_set"] is True and profile["sftp_password_set_at"]
    assert "a-long-sftp-passphrase" not in response.content.decode()
    owner.refresh_from_db()
    assert owner.sftp_password != "a-long-sftp-passphrase"
    assert check_password("a-long-sftp-passphrase", owner.sftp_password)
    assert not check_password("a-long-sftp-passphrase", owner.password)  # not the account's
    event = Event.objects.get(type="user.sftp_password_set")
    assert "a-long-sftp-passphrase" not in str(event.data)


@pytest.mark.parametrize(
    ("password", "code"),
    [
        ("short", "password_too_short"),
        ("12345678901", "password_entirely_numeric"),
        ("password123", "password_too_common"),
    ],
)
def test_a_weak_sftp_password_is_refused_by_the_account_rules(me_api, password, code):
    codes = field_errors(me_api.put(PASSWORD, {"password": password}, format="json"))
    assert ("password", code) in codes


def test_removing_the_sftp_password(me_api, owner):
    me_api.put(PASSWORD, {"password": "a-long-sftp-passphrase"}, format="json")
    response = me_api.delete(PASSWORD)
    assert response.status_code == 200
    assert response.json()["data"]["profile"]["sftp_password_set"] is False
    owner.refresh_from_db()
    assert owner.sftp_password == "" and owner.sftp_password_set_at is None
    assert Event.objects.filter(type="user.sftp_password_removed").count() == 1
    # Removing none changes nothing and records nothing.
    assert me_api.delete(PASSWORD).status_code == 200
    assert Event.objects.filter(type="user.sftp_password_removed").count() == 1


def test_credential_events_are_recorded_in_each_of_the_users_accounts(
    me_api, owner, account, other_account
):
    MembershipFactory(account=other_account, user=owner, role=Role.VIEWER)
    me_api.post(KEYS, {"public_key": ed25519_line()}, format="json")
    accounts = set(Event.objects.filter(type="ssh_key.created").values_list("account", flat=True))
    assert accounts == {account.id, other_account.id}


def test_a_key_without_profile_scopes_leaves_the_password_alone(
    owner, account, make_token, client_for
):
    api = client_for(make_token(owner, account, ["profile:read"]))
    error_of(api.put(PASSWORD, {"password": "a-long-sftp-passphrase"}, format="json"), 403)
    assert User.objects.get(pk=owner.pk).sftp_password == ""
