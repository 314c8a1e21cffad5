"""The home page (the current account's servers), the account switcher and account-less users."""

import re
from datetime import timedelta

from django.utils import timezone

from accounts.middleware import SESSION_ACCOUNT_KEY
from accounts.models import Account, Membership
from accounts.roles import Role
from tests.dashboard import messages_of, signed_in
from tests.factories import ServerFactory, UserFactory


def test_home_lists_the_current_accounts_servers_newest_first(owner, account, other_account):
    now = timezone.now()
    older = ServerFactory(account=account, name="Older", created_at=now - timedelta(days=1))
    newer = ServerFactory(account=account, name="Newer", created_at=now)
    ServerFactory(account=other_account, name="Not ours")
    response = signed_in(owner).get("/")
    assert list(response.context["servers"]) == [newer, older]
    body = response.content.decode()
    assert 'id="servers"' in body
    assert f"<code>{newer.id}</code>" in body
    assert re.search(r'<span class="badge badge-running"[^>]*>Running</span>', body)
    assert "Not ours" not in body


def test_home_pages_by_25_in_a_fixed_number_of_queries(
    owner, account, django_assert_max_num_queries
):
    for _ in range(26):
        ServerFactory(account=account)
    client = signed_in(owner)
    with django_assert_max_num_queries(8):  # 2 of them: the game and region filter menus
        first = client.get("/")
    assert len(first.context["servers"]) == 25
    assert 'href="?page=2"' in first.content.decode()
    assert len(client.get("/", {"page": 2}).context["servers"]) == 1
    past_the_end = client.get("/", {"page": 3})  # the last page, said so (test_list_pieces.py)
    assert past_the_end.status_code == 200
    assert past_the_end.context["page_obj"].number == 2


def test_a_user_of_one_account_gets_no_switcher(owner):
    body = signed_in(owner).get("/").content.decode()
    assert 'id="account-switcher"' not in body


def test_a_user_of_several_accounts_switches_between_them(owner, account, other_account):
    Membership.objects.create(account=other_account, user=owner, role=Role.VIEWER)
    client = signed_in(owner, account)
    body = client.get("/settings/team").content.decode()
    assert 'id="account-switcher"' in body
    assert f'<option value="{other_account.id}">' in body
    assert '<button type="submit" class="button button-small">Switch</button>' in body

    response = client.post("/switch", {"account_id": other_account.id}, follow=True)
    assert response.redirect_chain == [("/", 302)]
    assert response.context["current_account"] == other_account
    assert messages_of(response) == [f"Switched to {other_account.name}."]
    assert client.session[SESSION_ACCOUNT_KEY] == other_account.id
    assert client.get("/settings/activity").status_code == 403  # a viewer there


def test_switching_to_an_account_one_is_not_in_is_404(owner, account, other_account):
    client = signed_in(owner, account)
    assert client.post("/switch", {"account_id": other_account.id}).status_code == 404
    assert client.post("/switch", {}).status_code == 404
    assert client.get("/").context["current_account"] == account


def test_a_stale_account_choice_falls_back_to_a_current_one(owner, account, other_account):
    client = signed_in(owner, other_account)  # never a member there
    assert client.get("/").context["current_account"] == account


def test_a_user_without_an_account_is_told_and_can_create_one(db):
    user = UserFactory()
    client = signed_in(user)
    for path in ["/", "/settings/api-keys", "/settings/team"]:
        response = client.get(path)
        assert "You are not a member of any account" in response.content.decode()
    assert client.get("/settings/profile").status_code == 200

    response = client.post("/accounts/new", {"account_name": ""})
    assert response.context["form"].errors["account_name"]
    response = client.post("/accounts/new", {"account_name": "My Own Hosting"}, follow=True)
    account = Account.objects.get(name="My Own Hosting")
    assert account.memberships.get(user=user).role == Role.OWNER
    assert response.context["current_account"] == account
