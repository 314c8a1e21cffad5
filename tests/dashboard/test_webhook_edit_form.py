"""Settings → Webhooks → an endpoint → Edit: a page of its own, event types grouped by resource.

"All events" (``*``) and everything of a resource (``server.*``) are one tick each; single types
are folded away per resource unless one of them is ticked. The form still goes through
``endpoint_update``, so its rules and events are the service's.
"""

import re

import pytest
from django.test import override_settings

from accounts.roles import Role
from accounts.services import account_suspend
from events.catalogue import ALL_EVENT_TYPES, EVENT_TYPES
from events.models import Event
from events.services import SYSTEM, Actor
from tests.dashboard import field_errors, messages_of, signed_in
from tests.factories import MembershipFactory
from webhooks.models import WebhookEndpoint
from webhooks.services import endpoint_create

HOOK_URL = "http://127.0.0.1:9/hook"
OTHER_URL = "http://127.0.0.2:9/other"
VIEWER_REFUSED = "As Viewer, you may not create, change and delete webhook endpoints."
SUSPENDED = "This account is suspended, so its data cannot be changed."


@pytest.fixture(autouse=True)
def _local_targets():
    # Lets the endpoints point at 127.0.0.x; no request is ever sent in these tests.
    with override_settings(WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE_TARGETS=True):
        yield


@pytest.fixture
def endpoint(owner, account) -> WebhookEndpoint:
    endpoint, _ = endpoint_create(
        account=account,
        url=HOOK_URL,
        enabled_events=["server.*", "bot.crashed"],
        description="Status page",
        actor=Actor(user=owner),
    )
    return endpoint


@pytest.fixture
def viewer(account):
    return MembershipFactory(account=account, role=Role.VIEWER).user


def detail_url(endpoint) -> str:
    return f"/settings/webhooks/{endpoint.id}"


def edit_url(endpoint) -> str:
    return f"/settings/webhooks/{endpoint.id}/edit"


def edit(endpoint, **changes) -> dict:
    """The edit form as the browser sends it: what the endpoint has, with ``changes``."""
    return {
        "url": endpoint.url,
        "description": endpoint.description,
        "enabled_events": endpoint.enabled_events,
        **changes,
    }


def group_of(body: str, group_id: str) -> str:
    """The markup of one resource's box of the event picker."""
    pattern = rf'<fieldset class="event-group" id="{group_id}">.*?</fieldset>'
    return re.search(pattern, body, re.S)[0]


def updates_of(endpoint) -> list[Event]:
    return list(Event.objects.filter(type="webhook_endpoint.updated", object_id=endpoint.id))


# --- The page and its picker ------------------------------------------------------------------


def test_the_edit_page_shows_the_endpoint_as_it_is(owner, endpoint):
    response = signed_in(owner).get(edit_url(endpoint))
    assert response.status_code == 200
    body = response.content.decode()
    assert f'<form id="edit-webhook" method="post" action="{edit_url(endpoint)}"' in body
    assert f'value="{HOOK_URL}"' in body and 'value="Status page"' in body
    assert 'value="server.*" id="event-server-all" checked' in body
    assert 'value="bot.crashed" id="event-bot-crashed" checked' in body
    assert 'value="*" id="event-all" data-covers="*"' in body  # not ticked
    assert body.count(" checked") == 2
    assert f'href="{detail_url(endpoint)}">Cancel</a>' in body


def test_each_resource_has_a_one_click_wildcard_and_its_single_types_folded(owner, endpoint):
    body = signed_in(owner).get(edit_url(endpoint)).content.decode()
    assert 'value="*" id="event-all"' in body
    for group_id, legend, wildcards in [
        ("events-servers", "Servers", ["server.*"]),
        ("events-bots", "Bots", ["bot.*"]),
        ("events-api-keys", "API keys", ["api_key.*"]),
        ("events-team", "Team", ["member.*"]),
        ("events-account", "Account", ["account.*", "user.*"]),
        ("events-webhooks", "Webhooks", ["webhook_endpoint.*", "webhook.*"]),
    ]:
        group = group_of(body, group_id)
        assert f"<legend>{legend}</legend>" in group
        for wildcard in wildcards:
            assert f'value="{wildcard}"' in group and f'data-covers="{wildcard}"' in group
    assert "All API key events" in body and "All member events" in body
    for event_type in ALL_EVENT_TYPES:
        assert body.count(f'value="{event_type}"') == 1, event_type
    # Only the group with a single type ticked is unfolded, and says how many are.
    bots = group_of(body, "events-bots")
    assert '<details class="event-types" open>' in bots and "1 chosen" in bots
    servers = group_of(body, "events-servers")
    assert '<details class="event-types">' in servers and "chosen" not in servers


def test_the_new_endpoint_page_uses_the_same_picker(owner, account):
    client = signed_in(owner)
    body = client.get("/settings/webhooks/new").content.decode()
    assert 'value="*" id="event-all"' in body
    assert "<legend>Team</legend>" in group_of(body, "events-team")
    assert body.count('<details class="event-types">') == len(EVENT_TYPES)  # all folded

    response = client.post(
        "/settings/webhooks/new",
        {"url": HOOK_URL, "description": "", "enabled_events": ["member.*"], "enabled": "on"},
    )
    assert response.status_code == 302
    assert WebhookEndpoint.objects.get(account=account).enabled_events == ["member.*"]


# --- Saving -----------------------------------------------------------------------------------


def test_a_one_click_resource_choice_is_saved_as_its_wildcard(owner, endpoint):
    response = signed_in(owner).post(
        edit_url(endpoint), edit(endpoint, enabled_events=["member.*", "api_key.*"]), follow=True
    )
    assert response.redirect_chain == [(detail_url(endpoint), 302)]
    assert messages_of(response) == ["Saved the webhook endpoint."]
    endpoint.refresh_from_db()
    assert endpoint.enabled_events == ["api_key.*", "member.*"]
    (event,) = updates_of(endpoint)
    assert event.data["previous_attributes"] == {"enabled_events": ["bot.crashed", "server.*"]}
    assert "<code>member.*</code></li>" in response.content.decode()


def test_what_a_ticked_wildcard_covers_is_not_kept_beside_it(owner, endpoint):
    client = signed_in(owner)
    client.post(edit_url(endpoint), edit(endpoint, enabled_events=["*", "bot.crashed", "user.*"]))
    endpoint.refresh_from_db()
    assert endpoint.enabled_events == ["*"]

    client.post(
        edit_url(endpoint),
        edit(endpoint, enabled_events=["server.*", "server.crashed", "bot.crashed", "user.*"]),
    )
    endpoint.refresh_from_db()
    assert endpoint.enabled_events == ["bot.crashed", "server.*", "user.*"]


def test_saving_nothing_new_records_no_change(owner, endpoint):
    response = signed_in(owner).post(edit_url(endpoint), edit(endpoint))
    assert response.status_code == 302
    assert updates_of(endpoint) == []


def test_a_new_url_makes_the_editor_the_one_it_acts_as(owner, teammate, endpoint):
    client = signed_in(teammate)
    client.post(edit_url(endpoint), edit(endpoint, description="Deploy bot"))
    endpoint.refresh_from_db()
    assert (endpoint.description, endpoint.created_by) == ("Deploy bot", owner)

    client.post(edit_url(endpoint), edit(endpoint, url=OTHER_URL))
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.created_by) == (OTHER_URL, teammate)


# --- Refusals stay on the form ----------------------------------------------------------------


def test_no_event_chosen_is_refused_next_to_the_picker(owner, endpoint):
    response = signed_in(owner).post(
        edit_url(endpoint), edit(endpoint, description="Changed", enabled_events=[])
    )
    assert response.status_code == 200
    assert field_errors(response, "enabled_events") == [
        "Choose at least one event type, or all events."
    ]
    body = response.content.decode()
    assert '<fieldset class="field event-picker field-invalid"' in body
    assert 'value="Changed"' in body
    endpoint.refresh_from_db()
    assert endpoint.description == "Status page"
    assert endpoint.enabled_events == ["bot.crashed", "server.*"]


def test_an_unknown_event_type_is_refused(owner, endpoint):
    response = signed_in(owner).post(
        edit_url(endpoint), edit(endpoint, enabled_events=["server.exploded"])
    )
    assert response.status_code == 200
    assert field_errors(response, "enabled_events") == [
        "Select a valid choice. server.exploded is not one of the available choices."
    ]
    endpoint.refresh_from_db()
    assert endpoint.enabled_events == ["bot.crashed", "server.*"]


def test_a_refused_url_keeps_the_ticked_events_on_show(owner, endpoint):
    with override_settings(WEBHOOKS_ALLOW_HTTP=False):
        response = signed_in(owner).post(
            edit_url(endpoint), edit(endpoint, url=OTHER_URL, enabled_events=["member.added"])
        )
    assert response.status_code == 200
    assert field_errors(response, "url") == ["Webhook URLs must use https://."]
    body = response.content.decode()
    assert f'value="{OTHER_URL}"' in body
    team = group_of(body, "events-team")
    assert '<details class="event-types" open>' in team
    assert 'value="member.added" id="event-member-added" checked' in team
    assert 'value="server.*" id="event-server-all" data-covers' in body  # no longer ticked
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.enabled_events) == (HOOK_URL, ["bot.crashed", "server.*"])
    assert updates_of(endpoint) == []


# --- Who may open it --------------------------------------------------------------------------


def test_a_viewer_is_sent_back_to_the_endpoint(viewer, endpoint):
    client = signed_in(viewer)
    for response in [
        client.get(edit_url(endpoint), follow=True),
        client.post(edit_url(endpoint), edit(endpoint, description="Mine now"), follow=True),
    ]:
        assert response.redirect_chain == [(detail_url(endpoint), 302)]
        assert messages_of(response) == [VIEWER_REFUSED]
        assert 'name="enabled_events"' not in response.content.decode()
    endpoint.refresh_from_db()
    assert endpoint.description == "Status page"


def test_a_viewer_cannot_open_the_new_endpoint_page(viewer):
    response = signed_in(viewer).get("/settings/webhooks/new", follow=True)
    assert response.redirect_chain == [("/settings/webhooks", 302)]
    assert messages_of(response) == [VIEWER_REFUSED]


def test_an_outsider_gets_404(outsider, endpoint):
    client = signed_in(outsider)
    assert client.get(edit_url(endpoint)).status_code == 404
    response = client.post(edit_url(endpoint), edit(endpoint, url=OTHER_URL, description="x"))
    assert response.status_code == 404
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.description) == (HOOK_URL, "Status page")


def test_an_unknown_endpoint_is_404(owner, endpoint):
    assert signed_in(owner).get(f"/settings/webhooks/whe_{'0' * 24}/edit").status_code == 404


@pytest.mark.parametrize("role", [Role.BILLING, Role.SUPPORT])
def test_roles_without_webhooks_read_are_told_their_role_does_not_open_it(account, endpoint, role):
    client = signed_in(MembershipFactory(account=account, role=role).user)
    assert client.get(edit_url(endpoint)).status_code == 403
    assert client.post(edit_url(endpoint), edit(endpoint, description="x")).status_code == 403


def test_a_suspended_account_cannot_open_or_save_the_edit_page(owner, account, endpoint):
    account_suspend(account=account, reason="Unpaid invoice INV-42", actor=SYSTEM)
    client = signed_in(owner)
    response = client.get(edit_url(endpoint), follow=True)
    assert response.redirect_chain == [(detail_url(endpoint), 302)]
    assert "This account is suspended" in response.content.decode()

    response = client.post(edit_url(endpoint), edit(endpoint, description="x"), follow=True)
    assert messages_of(response) == [SUSPENDED]
    endpoint.refresh_from_db()
    assert endpoint.description == "Status page"
