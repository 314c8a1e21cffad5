"""Helpers shared by the dashboard tests (plain functions: this package has no conftest)."""

import re

from django.http import HttpResponse
from django.test import Client

from accounts.middleware import SESSION_ACCOUNT_KEY
from accounts.models import Account, User


def signed_in(user: User, account: Account | None = None) -> Client:
    """A browser session of ``user``, looking at ``account`` when given."""
    client = Client()
    # The stored row, not the factory's instance: the session hash must match the database.
    client.force_login(User.objects.get(pk=user.pk))
    if account is not None:
        session = client.session
        session[SESSION_ACCOUNT_KEY] = account.id
        session.save()
    return client


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def api_status(token: str) -> tuple[int, str | None]:
    """The status and error code that ``GET /v1/servers`` answers with this token."""
    response = Client().get("/v1/servers", HTTP_AUTHORIZATION=f"Bearer {token}")
    body = response.json()
    return response.status_code, None if body["success"] else body["error"]["code"]


def field_errors(response, field: str) -> list[str]:
    return list(response.context["form"].errors.get(field, []))


def html_id_text(response, element_id: str) -> str | None:
    """The text inside the element with this id (for simple, unnested elements)."""
    match = re.search(
        rf'<(\w+)[^>]*\bid="{re.escape(element_id)}"[^>]*>(.*?)</\1>',
        response.content.decode(),
        re.S,
    )
    return match.group(2).strip() if match else None


def shown_once(
    client: Client, list_url: str, data: dict, element_id: str
) -> tuple[str, HttpResponse]:
    """Create through the form at ``{list_url}/new``: it leads to ``{list_url}/created``, which
    shows the new secret (the text of ``element_id``) this once, never cached, and sends the
    next visit back to the list. Returns the secret and its page."""
    response = client.post(f"{list_url}/new", data)
    assert response.status_code == 302
    assert response["Location"] == f"{list_url}/created"
    shown = client.get(f"{list_url}/created")
    assert shown.status_code == 200
    assert "no-store" in shown["Cache-Control"]
    assert "will not be shown again" in shown.content.decode()
    again = client.get(f"{list_url}/created")
    assert again.status_code == 302
    assert again["Location"] == list_url
    return html_id_text(shown, element_id), shown
