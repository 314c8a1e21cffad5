"""Bots pages: create, detail with power buttons, settings, delete and activity. The Discord token
goes in once and never comes out: no page, error or message ever contains it."""

import re

import pytest

from accounts.actors import SYSTEM, Actor
from accounts.roles import Role
from accounts.services import account_suspend
from hosting.secrets_box import decrypt_secret
from servers.models import Bot
from servers.services import bot_create
from tests.dashboard import field_errors, messages_of, signed_in
from tests.factories import MembershipFactory
from tests.servers.helpers import run_worker

TOKEN = "MTA5ODc2NTQzMjEwOTg3NjU0.GhIjKl.super-secret-token-abcd"
NEW_TOKEN = "OTg3NjU0MzIxMDk4NzY1NDMy.XyZwVu.another-secret-token-wxyz"
BOT_FORM = {
    "name": "Moderator",
    "region": "eu-west",
    "runtime": "python-3.13",
    "start_command": "python bot.py",
    "token": TOKEN,
    "environment": "LOG_LEVEL=info\n# a comment\n\nGREETING=hello=world",
    "memory_mb": "512",
    "cpu_percent": "50",
    "disk_mb": "2048",
    "auto_restart": "on",
}


@pytest.fixture
def bot(owner, account) -> Bot:
    """A bot the worker has provisioned and installed: stopped."""
    created = bot_create(
        account=account,
        name="Moderator",
        region="eu-west",
        runtime="python-3.13",
        start_command="python bot.py",
        token=TOKEN,
        environment={"LOG_LEVEL": "info"},
        actor=Actor(user=owner),
    )
    run_worker()
    created.refresh_from_db()
    return created


class NoTokenClient:
    """A signed-in client that checks every page it gets for the tokens and their ciphertext."""

    def __init__(self, user, *secrets: str):
        self.client, self.secrets = signed_in(user), [TOKEN, NEW_TOKEN, *secrets]

    def _checked(self, response):
        body = response.content.decode()
        for secret in self.secrets:
            assert secret not in body, f"a token leaked into {response.request['PATH_INFO']}"
        return response

    def get(self, *args, **kwargs):
        return self._checked(self.client.get(*args, **kwargs))

    def post(self, *args, **kwargs):
        return self._checked(self.client.post(*args, **kwargs))


def power_buttons(response) -> list[str]:
    return re.findall(r'data-action="(\w+)"(?! hidden)', response.content.decode())


def bot_urls(bot: Bot) -> list[str]:
    base = f"/bots/{bot.id}"
    return [base, f"{base}/edit", f"{base}/delete", f"{base}/activity"]


def test_bots_are_in_the_navigation(owner):
    body = signed_in(owner).get("/bots").content.decode()
    assert '<a href="/bots" aria-current="page">Bots</a>' in body
    assert '<a href="/">Servers</a>' in body


def test_a_new_bot_is_created_run_and_never_shows_its_token(owner, account):
    client = NoTokenClient(owner)
    page = client.get("/bots/new")
    body = page.content.decode()
    assert '<input type="password" name="token"' in body
    assert '<select name="runtime"' in body
    assert re.search(r'name="memory_mb" value="512"', body)

    response = client.post("/bots/new", BOT_FORM, follow=True)
    bot = Bot.objects.get(account=account)
    assert response.redirect_chain == [(f"/bots/{bot.id}", 302)]
    assert messages_of(response) == ["Created “Moderator”: it is being provisioned."]
    assert bot.environment == {"LOG_LEVEL": "info", "GREETING": "hello=world"}
    assert decrypt_secret(bot.token_encrypted) == TOKEN
    assert '<code id="token-last4">…abcd</code>' in response.content.decode()
    client.secrets.append(bot.token_encrypted)

    run_worker()
    detail = client.get(f"/bots/{bot.id}")
    assert re.search(
        r'<span id="status" class="badge badge-stopped"[^>]*>Stopped</span>',
        detail.content.decode(),
    )
    assert power_buttons(detail) == ["start", "reinstall"]
    client.post(f"/bots/{bot.id}/actions", {"type": "start"}, follow=True)
    bot.refresh_from_db()
    assert bot.status == "starting"
    run_worker()
    detail = client.get(f"/bots/{bot.id}")
    assert power_buttons(detail) == ["stop", "restart", "kill"]

    listing = client.get("/bots")
    assert 'id="bots"' in listing.content.decode()
    assert "<code>…abcd</code>" in listing.content.decode()
    for url in bot_urls(bot):
        assert client.get(url).status_code == 200, url


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"environment": "NOT A LINE"}, "environment", "Line 1: write KEY=value."),
        (
            {"environment": "1BAD=x"},
            "environment",
            "Names are letters, digits and _; values are strings of at most 4096 characters.",
        ),
        ({"start_command": ""}, "start_command", "This field is required."),
    ],
)
def test_a_refused_form_keeps_what_was_typed_but_never_the_token(
    owner, account, change, field, message
):
    response = NoTokenClient(owner).post("/bots/new", {**BOT_FORM, **change})
    assert response.status_code == 200
    assert field_errors(response, field) == [message]
    body = response.content.decode()
    assert 'value="Moderator"' in body
    assert re.search(r'<input type="password" name="token"(?![^>]*value=)', body)
    assert not Bot.objects.exists()


def test_a_bad_token_is_refused_without_echoing_it(owner):
    short = "too-short-token"
    response = NoTokenClient(owner, short).post("/bots/new", {**BOT_FORM, "token": short})
    assert field_errors(response, "token") == [
        "token must be the bot's Discord token (20 to 200 printable ASCII characters, no spaces)."
    ]
    assert not Bot.objects.exists()


def test_settings_keep_the_token_unless_a_new_one_is_given(owner, bot):
    client = NoTokenClient(owner, bot.token_encrypted)
    page = client.get(f"/bots/{bot.id}/edit")
    body = page.content.decode()
    assert "LOG_LEVEL=info</textarea>" in body
    assert "Leave empty to keep the current token (…abcd)." in body

    form = {**BOT_FORM, "token": "", "environment": "LOG_LEVEL=debug"}
    response = client.post(f"/bots/{bot.id}/edit", form, follow=True)
    assert messages_of(response) == ["Saved “Moderator”."]
    bot.refresh_from_db()
    assert bot.environment == {"LOG_LEVEL": "debug"}
    assert decrypt_secret(bot.token_encrypted) == TOKEN

    client.post(f"/bots/{bot.id}/actions", {"type": "start"}, follow=True)
    run_worker()
    form = {**form, "token": NEW_TOKEN, "start_command": "python -m bot"}
    response = client.post(f"/bots/{bot.id}/edit", form, follow=True)
    assert messages_of(response) == [
        "Saved. Restart “Moderator” for the new start command and token to take effect."
    ]
    bot.refresh_from_db()
    assert (bot.token_last4, bot.start_command) == ("wxyz", "python -m bot")
    assert decrypt_secret(bot.token_encrypted) == NEW_TOKEN
    client.secrets.append(bot.token_encrypted)
    client.get(f"/bots/{bot.id}/activity")


def test_deleting_a_bot_asks_first(owner, bot):
    client = NoTokenClient(owner, bot.token_encrypted)
    assert 'id="confirm-delete"' in client.get(f"/bots/{bot.id}/delete").content.decode()
    response = client.post(f"/bots/{bot.id}/delete", follow=True)
    assert response.redirect_chain == [("/bots", 302)]
    assert re.search(
        r'<span class="badge badge-deleting"[^>]*>Deleting</span>',
        response.content.decode(),
    )
    run_worker()
    for url in bot_urls(bot):
        assert client.get(url).status_code == 404, url


def test_activity_lists_the_bots_events(owner, bot):
    response = NoTokenClient(owner, bot.token_encrypted).get(f"/bots/{bot.id}/activity")
    types = [event.type for event in response.context["events"]]
    assert types[-1] == "bot.created"
    assert "action.succeeded" in types


def test_an_outsider_gets_404_for_every_bot_page_and_change(outsider, bot):
    client = NoTokenClient(outsider, bot.token_encrypted)
    for url in bot_urls(bot):
        assert client.get(url).status_code == 404, url
    for url, data in [
        (f"/bots/{bot.id}/actions", {"type": "start"}),
        (f"/bots/{bot.id}/edit", {**BOT_FORM, "name": "Taken"}),
        (f"/bots/{bot.id}/delete", {}),
    ]:
        assert client.post(url, data).status_code == 404, url
    bot.refresh_from_db()
    assert (bot.name, bot.status) == ("Moderator", "stopped")


def test_a_viewer_sees_no_buttons_and_is_refused(account, bot):
    viewer = MembershipFactory(account=account, role=Role.VIEWER).user
    client = NoTokenClient(viewer, bot.token_encrypted)
    assert 'id="new-bot"' not in client.get("/bots").content.decode()
    detail = client.get(f"/bots/{bot.id}")
    assert power_buttons(detail) == []
    assert 'id="edit-link"' not in detail.content.decode()
    response = client.post(f"/bots/{bot.id}/actions", {"type": "start"}, follow=True)
    assert messages_of(response) == [
        "As Viewer, you may not start, stop, restart and kill Discord bots."
    ]
    response = client.post("/bots/new", BOT_FORM, follow=True)
    assert messages_of(response) == [
        "As Viewer, you may not create, configure and delete Discord bots."
    ]
    bot.refresh_from_db()
    assert bot.status == "stopped"
    assert Bot.objects.count() == 1


def test_a_suspended_account_changes_no_bot(owner, account, bot):
    account_suspend(account=account, reason="Unpaid invoice", actor=SYSTEM)
    client = NoTokenClient(owner, bot.token_encrypted)
    assert power_buttons(client.get(f"/bots/{bot.id}")) == []
    for url, data in [
        (f"/bots/{bot.id}/actions", {"type": "start"}),
        (f"/bots/{bot.id}/edit", {**BOT_FORM, "name": "Renamed"}),
        ("/bots/new", BOT_FORM),
    ]:
        response = client.post(url, data, follow=True)
        assert messages_of(response) == [
            "This account is suspended, so its data cannot be changed."
        ], url
    bot.refresh_from_db()
    assert (bot.name, bot.status) == ("Moderator", "stopped")
