"""Profile → Security → Single sign-on: a person links an identity at the host's provider
(against the real provider process) and unlinks it; the only way in is never unlinked; staff
see linked identities in admin and change none."""

import pytest
from allauth.socialaccount.models import SocialAccount
from django.test import Client

from events.models import Event
from tests.factories import MembershipFactory, UserFactory
from tests.sso.relying_party import (
    PASSWORD,
    local,
    password_client,
    sign_in_with_sso,
    signed_in_user_id,
    start,
)

pytestmark = pytest.mark.django_db
CONNECTIONS = "/auth/sso/connections/"


@pytest.fixture
def person(db):
    return MembershipFactory(user=UserFactory(email="g.hopper@example.com", password=PASSWORD)).user


def link(client: Client, provider, *, email: str) -> object:
    return client.get(local(provider.sign_in(start(client, process="connect"), email=email)))


def test_profile_leads_to_the_single_sign_on_page_when_a_provider_is_configured(idp, person):
    client = password_client(person)

    profile = client.get("/settings/profile").content.decode()
    page = client.get(CONNECTIONS)

    assert f'href="{CONNECTIONS}"' in profile
    assert page.status_code == 200
    text = page.content.decode()
    assert "No identity is linked yet" in text and "Link Example IdP" in text
    assert 'class="app' in text  # the dashboard's layout


def test_without_a_provider_profile_does_not_mention_single_sign_on(person, monkeypatch, settings):
    from tests.sso.relying_party import configure

    configure(monkeypatch, settings)
    client = password_client(person)

    assert CONNECTIONS not in client.get("/settings/profile").content.decode()


def test_a_person_links_an_identity_then_signs_in_with_it(idp, person):
    """Grace's address at the provider is not verified (and not hers here): linking is her
    own act, signed in with her password, so it needs neither."""
    client = password_client(person)

    answer = link(client, idp, email="grace@idp.example.com")

    assert answer.status_code == 302 and answer["Location"] == CONNECTIONS
    account = SocialAccount.objects.get(user=person)
    assert (account.provider, account.uid) == ("oidc", "op-grace")
    page = client.get(CONNECTIONS).content.decode()
    assert "Example IdP" in page and "grace@idp.example.com" in page
    linked = Event.objects.get(type="user.sso_linked")
    assert linked.data["object"]["automatic"] is False
    assert linked.actor_user_id == person.id
    [request] = idp.authorization_requests()
    assert request["code_challenge_method"] == "S256" and request["nonce"]

    other = Client()
    assert sign_in_with_sso(other, idp, email="grace@idp.example.com").status_code == 302
    assert signed_in_user_id(other) == str(person.pk)


def test_linking_checks_the_id_token_too(idp, person):
    client = password_client(person)
    idp.set_id_token_mode("wrong-nonce")

    answer = link(client, idp, email="grace@idp.example.com")

    assert answer.status_code == 302 and answer["Location"] == CONNECTIONS
    assert not SocialAccount.objects.exists()
    assert "Sign-in with Example IdP failed" in client.get(CONNECTIONS).content.decode()


def test_an_identity_linked_to_someone_else_is_not_linked_again(idp, person):
    SocialAccount.objects.create(user=UserFactory(), provider="oidc", uid="op-grace")
    client = password_client(person)

    link(client, idp, email="grace@idp.example.com")

    assert not SocialAccount.objects.filter(user=person).exists()
    page = client.get(CONNECTIONS).content.decode()
    assert "This identity is already linked to another person here" in page


def test_linking_asks_a_fresh_sign_in_after_a_while(idp, person):
    client = password_client(person)
    session = client.session
    session["account_authentication_methods"] = []  # signed in long ago
    session.save()

    answer = link(client, idp, email="grace@idp.example.com")

    assert answer.status_code == 302 and answer["Location"].startswith("/auth/reauthenticate/")
    assert not SocialAccount.objects.exists()
    again = client.post(answer["Location"], {"password": PASSWORD})
    assert again.status_code == 302 and again["Location"] == CONNECTIONS
    assert SocialAccount.objects.get(user=person).uid == "op-grace"


def test_unlinking_asks_a_fresh_sign_in_after_a_while(idp, person):
    account = SocialAccount.objects.create(user=person, provider="oidc", uid="op-grace")
    client = password_client(person)
    session = client.session
    session["account_authentication_methods"] = []  # signed in long ago
    session.save()

    answer = client.post(CONNECTIONS, {"account": account.pk})

    assert answer.status_code == 302 and answer["Location"].startswith("/auth/reauthenticate/")
    assert SocialAccount.objects.filter(pk=account.pk).exists()


def test_a_person_unlinks_an_identity(idp, person):
    account = SocialAccount.objects.create(user=person, provider="oidc", uid="op-grace")
    client = password_client(person)

    answer = client.post(CONNECTIONS, {"account": account.pk})

    assert answer.status_code == 302
    assert not SocialAccount.objects.exists()
    unlinked = Event.objects.get(type="user.sso_unlinked")
    assert unlinked.data["object"] == {
        "id": person.id,
        "email": person.email,
        "provider": "oidc",
        "uid": "op-grace",
    }
    assert sign_in_with_sso(Client(), idp, email="grace@idp.example.com")["Location"] == "/login"


def test_the_only_way_in_is_not_unlinked(idp, person):
    """A person who signed in only with single sign-on (no usable password) keeps it."""
    account = SocialAccount.objects.create(user=person, provider="oidc", uid="op-grace")
    person.set_unusable_password()
    person.save(update_fields=["password"])
    client = Client()
    sign_in_with_sso(client, idp, email="grace@idp.example.com")
    assert signed_in_user_id(client) == str(person.pk)

    answer = client.post(CONNECTIONS, {"account": account.pk})

    assert answer.status_code == 200
    assert "This is your only way to sign in" in answer.content.decode()
    assert SocialAccount.objects.filter(pk=account.pk).exists()
    assert not Event.objects.filter(type="user.sso_unlinked").exists()


def test_nobody_unlinks_another_persons_identity(idp, person):
    theirs = SocialAccount.objects.create(user=UserFactory(), provider="oidc", uid="op-ada")
    client = password_client(person)

    answer = client.post(CONNECTIONS, {"account": theirs.pk})

    assert answer.status_code == 200 and "Select a valid choice" in answer.content.decode()
    assert SocialAccount.objects.filter(pk=theirs.pk).exists()


def test_signed_out_the_page_asks_to_sign_in(idp):
    answer = Client().get(CONNECTIONS)

    assert answer.status_code == 302 and answer["Location"].startswith("/login")


def test_staff_see_linked_identities_in_admin_and_change_none(idp, person, staff_client):
    from allauth.socialaccount.models import SocialApp, SocialToken
    from django.contrib import admin

    from tests.accounts.test_admin import admin_url

    account = SocialAccount.objects.create(user=person, provider="oidc", uid="op-grace")

    assert staff_client.get(admin_url(SocialAccount, "change", account.pk)).status_code == 200
    assert staff_client.post(admin_url(SocialAccount, "delete", account.pk)).status_code == 403
    assert staff_client.get(admin_url(SocialAccount, "add")).status_code == 403
    assert SocialAccount.objects.filter(pk=account.pk).exists()
    # The providers are the host's variables, and no provider's tokens are kept.
    assert not admin.site.is_registered(SocialApp)
    assert not admin.site.is_registered(SocialToken)
