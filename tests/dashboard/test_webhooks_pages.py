"""Settings → Webhooks: endpoints, their secret shown once, deliveries, and who may do what.

The worker never runs here, so nothing is contacted: deliveries stay queued, and the ones that
"failed" get their attempts written directly.
"""

import json
import re
import time
from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.admin.utils import quote
from django.contrib.sessions.models import Session
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from accounts.actors import SYSTEM, Actor
from accounts.roles import Role
from accounts.services import account_suspend
from events.models import Event
from hosting.dashboard.secrets_once import SHOWN_FOR_SECONDS
from hosting.secrets_box import decrypt_secret
from tests.dashboard import field_errors, html_id_text, messages_of, shown_once, signed_in
from tests.factories import MembershipFactory
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.services import endpoint_create, endpoint_send_test

HOOK_URL = "http://127.0.0.1:9/hook"
NEW_ENDPOINT = {
    "url": HOOK_URL,
    "description": "Deploy bot",
    "enabled_events": ["server.*", "bot.crashed"],
    "enabled": "on",
}
SUSPENDED = "This account is suspended, so its data cannot be changed."
VIEWER_REFUSED = "As Viewer, you may not create, change and delete webhook endpoints."


@pytest.fixture(autouse=True)
def _local_targets():
    # Lets the endpoints point at 127.0.0.1; no request is ever sent in these tests.
    with override_settings(WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE_TARGETS=True):
        yield


@pytest.fixture
def created(owner, account) -> tuple[WebhookEndpoint, str]:
    return endpoint_create(
        account=account,
        url=HOOK_URL,
        enabled_events=["*"],
        description="Status page",
        actor=Actor(user=owner),
    )


@pytest.fixture
def endpoint(created) -> WebhookEndpoint:
    return created[0]


@pytest.fixture
def viewer(account):
    return MembershipFactory(account=account, role=Role.VIEWER).user


def failed_delivery(endpoint, *, status_code=500, excerpt="upstream exploded", error=""):
    """A test delivery that was tried once and failed, as the worker would have left it."""
    delivery = endpoint_send_test(endpoint=endpoint, actor=SYSTEM)
    WebhookAttempt.objects.create(
        delivery=delivery,
        status_code=status_code,
        duration_ms=87,
        response_excerpt=excerpt,
        error=error,
    )
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=DeliveryStatus.FAILED,
        attempt_count=1,
        last_status_code=status_code,
        next_attempt_at=None,
    )
    return delivery


def sent_tests_of(endpoint) -> int:
    return endpoint.deliveries.filter(event__type="webhook.test").count()


def detail_url(endpoint) -> str:
    return f"/settings/webhooks/{endpoint.id}"


def edit_url(endpoint) -> str:
    return f"/settings/webhooks/{endpoint.id}/edit"


def admin_url(model, view: str, *args) -> str:
    name = f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}"
    return reverse(name, args=[quote(arg) for arg in args])


# --- Creating and the secret ------------------------------------------------------------------


def test_webhooks_are_in_the_navigation(owner):
    body = signed_in(owner).get("/settings/webhooks").content.decode()
    assert '<a href="/settings/webhooks" aria-current="page">Webhooks</a>' in body


def test_the_form_groups_event_types_with_wildcards(owner):
    body = signed_in(owner).get("/settings/webhooks/new").content.decode()
    assert 'id="event-all"' in body and 'value="*"' in body
    for label in ["Servers", "Bots", "Team", "Account", "Webhooks"]:
        assert f"<legend>{label}</legend>" in body
    for value in ["server.*", "member.*", "account.*", "user.*", "server.crashed", "webhook.test"]:
        assert f'value="{value}"' in body


def test_a_new_endpoint_shows_its_secret_once_and_never_again(owner, account, staff_client):
    client = signed_in(owner)
    secret, shown = shown_once(client, "/settings/webhooks", NEW_ENDPOINT, "new-secret")
    assert secret.startswith("whsec_")
    assert 'data-copy-target="new-secret"' in shown.content.decode()

    endpoint = WebhookEndpoint.objects.get(account=account)
    assert (endpoint.url, endpoint.description, endpoint.enabled) == (HOOK_URL, "Deploy bot", True)
    assert endpoint.enabled_events == ["bot.crashed", "server.*"]
    assert endpoint.created_by == owner  # it receives what the owner may see
    assert decrypt_secret(endpoint.secret_encrypted) == secret
    for page in [
        client.get("/settings/webhooks"),
        client.get(detail_url(endpoint)),
        client.get(f"{detail_url(endpoint)}/rotate"),
        staff_client.get(admin_url(WebhookEndpoint, "changelist")),
        staff_client.get(admin_url(WebhookEndpoint, "change", endpoint.id)),
    ]:
        assert page.status_code == 200
        assert secret not in page.content.decode()
        assert endpoint.secret_encrypted not in page.content.decode()


def test_a_refused_form_keeps_what_was_typed(owner, account):
    client = signed_in(owner)
    response = client.post("/settings/webhooks/new", {**NEW_ENDPOINT, "enabled_events": []})
    assert response.status_code == 200
    assert field_errors(response, "enabled_events") == [
        "Choose at least one event type, or all events."
    ]
    assert f'value="{HOOK_URL}"' in response.content.decode()
    assert 'value="Deploy bot"' in response.content.decode()

    with override_settings(WEBHOOKS_ALLOW_HTTP=False):
        response = client.post("/settings/webhooks/new", NEW_ENDPOINT)
    assert field_errors(response, "url") == ["Webhook URLs must use https://."]
    body = response.content.decode()
    assert f'value="{HOOK_URL}"' in body
    assert 'value="server.*" id="event-server-all" checked' in body
    assert 'value="bot.crashed" id="event-bot-crashed" checked' in body
    assert not WebhookEndpoint.objects.filter(account=account).exists()


def test_private_addresses_are_refused_next_to_the_url(owner):
    with override_settings(WEBHOOKS_ALLOW_PRIVATE_TARGETS=False):
        response = signed_in(owner).post("/settings/webhooks/new", NEW_ENDPOINT)
    assert response.status_code == 200
    assert "private, loopback or reserved" in field_errors(response, "url")[0]


def test_the_endpoint_quota_is_said_above_the_form(owner, endpoint):
    with override_settings(WEBHOOKS_MAX_ENDPOINTS=1):
        response = signed_in(owner).post("/settings/webhooks/new", NEW_ENDPOINT)
    assert response.status_code == 200
    assert response.context["form"].non_field_errors() == [
        "An account may have 1 webhook endpoints."
    ]
    assert messages_of(response) == []
    assert WebhookEndpoint.objects.count() == 1


# --- The list and the detail page -------------------------------------------------------------


def test_the_list_shows_events_status_and_health(owner, endpoint, django_assert_max_num_queries):
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        enabled=False,
        disabled_reason="The endpoint answered 410 Gone.",
        failure_streak=4,
        last_delivery_status=410,
        last_delivery_at=endpoint.created_at,
    )
    client = signed_in(owner)
    with django_assert_max_num_queries(12):
        body = client.get("/settings/webhooks").content.decode()
    assert 'id="webhooks"' in body
    for column in ["Events", "Status", "Failure streak"]:
        assert f'<th scope="col">{column}</th>' in body
    for key, column in [("url", "URL"), ("last_delivery_at", "Last delivery")]:
        assert f'<a class="sort-link" href="?sort={key}">{column}</a>' in body
    assert f'href="/settings/webhooks/{endpoint.id}">{HOOK_URL}</a>' in body
    assert "All events" in body
    assert "disabled" in body and "The endpoint answered 410 Gone." in body
    assert "HTTP 410" in body and "4 failed" in body


@pytest.fixture
def hooks(owner, account, outsider, other_account) -> list[WebhookEndpoint]:
    """Three endpoints of the account, created a minute apart (deploys first), and a look-alike
    of another account's."""
    now = timezone.now().replace(microsecond=0)
    specs = [  # path, description, enabled, last delivery (minutes ago)
        ("deploys", "CI deploys", True, 2),
        ("status", "Status page", False, None),
        ("alerts", "Pager", True, 5),
    ]
    hooks = []
    for number, (path, description, enabled, delivered) in enumerate(specs):
        hook, _ = endpoint_create(
            account=account,
            url=f"http://127.0.0.1:9/{path}",
            description=description,
            enabled=enabled,
            enabled_events=["bot.crashed"],
            actor=Actor(user=owner),
        )
        WebhookEndpoint.objects.filter(pk=hook.pk).update(
            created_at=now - timedelta(minutes=len(specs) - number),
            last_delivery_at=None if delivered is None else now - timedelta(minutes=delivered),
        )
        hooks.append(hook)
    endpoint_create(
        account=other_account,
        url="http://127.0.0.1:9/deploys-elsewhere",
        description="CI",
        enabled_events=["bot.crashed"],
        actor=Actor(user=outsider),
    )
    return hooks


def paths(response) -> list[str]:
    return [endpoint.url.rsplit("/", 1)[1] for endpoint in response.context["endpoints"]]


def notices(response) -> list[str]:
    return response.context["listing"].notices


def test_the_list_finds_endpoints_by_a_part_of_the_url_or_the_description(owner, hooks):
    client = signed_in(owner)
    assert paths(client.get("/settings/webhooks", {"q": "DEPLOY"})) == ["deploys"]
    assert paths(client.get("/settings/webhooks", {"q": "STATUS PAGE"})) == ["status"]
    assert paths(client.get("/settings/webhooks", {"q": "127.0.0.1"})) == [
        "alerts",
        "status",
        "deploys",
    ]
    response = client.get("/settings/webhooks", {"q": "elsewhere"})  # another account's
    assert paths(response) == []
    body = response.content.decode()
    assert "No endpoint matches this search or these filters." in body
    assert (
        '<a class="button button-small" href="/settings/webhooks">Show every endpoint</a>' in body
    )
    assert 'name="q" value="elsewhere"' in body


def test_the_list_shows_the_enabled_or_the_disabled_endpoints(owner, hooks):
    client = signed_in(owner)
    assert paths(client.get("/settings/webhooks", {"status": "disabled"})) == ["status"]
    response = client.get("/settings/webhooks", {"status": "enabled", "q": "s"})
    assert paths(response) == ["alerts", "deploys"]
    assert '<option value="enabled" selected>Enabled</option>' in response.content.decode()

    refused = client.get("/settings/webhooks", {"status": "paused"})
    assert refused.status_code == 200
    assert paths(refused) == ["alerts", "status", "deploys"]
    assert notices(refused) == [
        "The status filter was left out: Select a valid choice. paused is not one of the "
        "available choices."
    ]
    assert 'id="list-notices"' in refused.content.decode()


def test_the_list_sorts_by_url_creation_or_last_delivery(owner, hooks):
    client = signed_in(owner)

    def listed(sort: str) -> list[str]:
        return paths(client.get("/settings/webhooks", {"sort": sort}))

    assert listed("") == ["alerts", "status", "deploys"]  # newest first
    assert listed("url") == ["alerts", "deploys", "status"]
    assert listed("-url") == ["status", "deploys", "alerts"]
    assert listed("created_at") == ["deploys", "status", "alerts"]
    # Never delivered to: last, whichever the direction.
    assert listed("-last_delivery_at") == ["deploys", "alerts", "status"]
    assert listed("last_delivery_at") == ["alerts", "deploys", "status"]

    response = client.get("/settings/webhooks", {"sort": "secret_encrypted", "status": "enabled"})
    assert paths(response) == ["alerts", "deploys"]
    assert notices(response) == [
        "This list cannot be sorted by “secret_encrypted”: it is in its usual order."
    ]
    body = client.get("/settings/webhooks", {"sort": "url", "status": "enabled"}).content.decode()
    assert (
        '<th scope="col" aria-sort="ascending"><a class="sort-link" '
        'href="?status=enabled&amp;sort=-url">URL <span aria-hidden="true">▲</span>'
    ) in body


def test_a_bad_page_of_the_list_is_the_first_or_the_last_with_a_notice(
    owner, account, django_assert_max_num_queries
):
    with override_settings(WEBHOOKS_MAX_ENDPOINTS=30):
        for number in range(26):
            endpoint_create(
                account=account,
                url=f"http://127.0.0.1:9/hook-{number:02}",
                enabled_events=["bot.crashed"],
                actor=Actor(user=owner),
            )
    client = signed_in(owner)
    for page, number, notice in [
        ("abc", 1, "“abc” is not a page number: this is page 1."),
        ("99", 2, "There is no page 99: this is the last page."),
        ("0", 2, "There is no page 0: this is the last page."),
        ("2", 2, None),
    ]:
        response = client.get("/settings/webhooks", {"page": page})
        assert response.status_code == 200, page
        assert response.context["page_obj"].number == number, page
        assert notices(response) == ([notice] if notice else []), page

    params = {"q": "hook", "status": "enabled", "sort": "url", "page": "x"}
    with django_assert_max_num_queries(12):
        response = client.get("/settings/webhooks", params)
    assert paths(response)[:2] == ["hook-00", "hook-01"]
    assert 'href="?q=hook&amp;status=enabled&amp;sort=url&amp;page=2" rel="next"' in (
        response.content.decode()
    )


def test_editing_saves_only_what_changed(owner, endpoint):
    client = signed_in(owner)
    response = client.post(
        edit_url(endpoint),
        {"url": HOOK_URL, "description": "Status page v2", "enabled_events": ["bot.*"]},
        follow=True,
    )
    assert messages_of(response) == ["Saved the webhook endpoint."]
    endpoint.refresh_from_db()
    assert (endpoint.description, endpoint.enabled_events) == ("Status page v2", ["bot.*"])
    event = Event.objects.filter(type="webhook_endpoint.updated").get()
    assert set(event.data["previous_attributes"]) == {"description", "enabled_events"}


def test_a_refused_edit_keeps_what_was_typed(owner, endpoint):
    with override_settings(WEBHOOKS_ALLOW_HTTP=False):
        response = signed_in(owner).post(
            edit_url(endpoint),
            {"url": "http://example.com/other", "description": "x", "enabled_events": ["*"]},
        )
    assert response.status_code == 200
    assert field_errors(response, "url") == ["Webhook URLs must use https://."]
    assert 'value="http://example.com/other"' in response.content.decode()
    endpoint.refresh_from_db()
    assert endpoint.url == HOOK_URL


def test_the_secret_waits_in_the_session_encrypted_and_only_five_minutes(owner, account):
    client = signed_in(owner)
    client.post("/settings/webhooks/new", NEW_ENDPOINT)
    session = Session.objects.get()
    endpoint = WebhookEndpoint.objects.get(account=account)
    secret = decrypt_secret(endpoint.secret_encrypted)
    assert secret not in session.session_data + json.dumps(session.get_decoded())

    with mock.patch("cryptography.fernet.time") as fernet_clock:
        fernet_clock.time.return_value = time.time() + SHOWN_FOR_SECONDS + 5
        response = client.get("/settings/webhooks/created", follow=True)

    assert response.redirect_chain == [(detail_url(endpoint), 302)]
    assert secret not in response.content.decode()
    assert messages_of(response) == [
        f"The signing secret of {HOOK_URL} is no longer shown: it is shown only within 5 "
        "minutes. Rotate the secret on the endpoint's page to get a new one."
    ]
    assert client.get("/settings/webhooks/created")["Location"] == "/settings/webhooks"


def test_rotating_asks_first_then_shows_the_new_secret_once(owner, created):
    endpoint, old_secret = created
    client = signed_in(owner)
    confirm = client.get(f"{detail_url(endpoint)}/rotate")
    assert 'id="confirm-rotate"' in confirm.content.decode()

    response = client.post(f"{detail_url(endpoint)}/rotate")
    assert response["Location"] == "/settings/webhooks/created"
    shown = client.get("/settings/webhooks/created")
    secret = html_id_text(shown, "new-secret")
    assert secret.startswith("whsec_") and secret != old_secret
    assert "Secret rotated" in shown.content.decode()
    assert client.get("/settings/webhooks/created").status_code == 302

    endpoint.refresh_from_db()
    assert decrypt_secret(endpoint.secret_encrypted) == secret
    assert decrypt_secret(endpoint.previous_secret_encrypted) == old_secret
    detail = client.get(detail_url(endpoint)).content.decode()
    assert secret not in detail and old_secret not in detail
    assert "the previous secret also signs until" in detail


def test_send_test_queues_a_delivery_shown_in_the_log(owner, endpoint):
    response = signed_in(owner).post(f"{detail_url(endpoint)}/test", follow=True)
    assert messages_of(response) == [
        "A webhook.test event is on its way; its delivery is listed below."
    ]
    delivery = endpoint.deliveries.get(event__type="webhook.test")
    assert delivery.status == DeliveryStatus.PENDING
    body = response.content.decode()
    assert 'id="deliveries"' in body
    assert f'id="delivery-{delivery.id}"' in body


def test_the_log_shows_attempts_and_retries_a_delivery(owner, endpoint):
    delivery = failed_delivery(endpoint, status_code=503, excerpt="try later <b>", error="")
    client = signed_in(owner)
    body = client.get(detail_url(endpoint)).content.decode()
    assert "<details" in body and "1 attempt</summary>" in body
    assert "HTTP 503" in body and "87 ms" in body
    assert "try later &lt;b&gt;" in body
    retry_url = f"{detail_url(endpoint)}/deliveries/{delivery.id}/retry"
    assert f'action="{retry_url}"' in body

    response = client.post(retry_url, follow=True)
    assert messages_of(response) == [f"Delivery {delivery.id} will be sent again now."]
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING


def test_a_delivery_never_tried_cannot_be_retried(owner, endpoint):
    delivery = endpoint_send_test(endpoint=endpoint, actor=SYSTEM)
    response = signed_in(owner).post(
        f"{detail_url(endpoint)}/deliveries/{delivery.id}/retry", follow=True
    )
    assert messages_of(response) == ["This delivery has not been attempted yet."]


def test_deliveries_are_newest_first_25_a_page(owner, endpoint, django_assert_max_num_queries):
    deliveries = [endpoint_send_test(endpoint=endpoint, actor=SYSTEM) for _ in range(26)]
    failed_delivery(endpoint, error="Could not connect: ConnectError.", status_code=None)
    client = signed_in(owner)
    with django_assert_max_num_queries(16):
        first = client.get(detail_url(endpoint))
    assert len(first.context["deliveries"]) == 25
    body = first.content.decode()
    assert "Could not connect: ConnectError." in body and "no answer" in body
    second = client.get(detail_url(endpoint), {"page": 2}).content.decode()
    assert f'id="delivery-{deliveries[0].id}"' in second
    assert f'id="delivery-{deliveries[0].id}"' not in body


def succeeded_delivery(endpoint):
    delivery = endpoint_send_test(endpoint=endpoint, actor=SYSTEM)
    WebhookAttempt.objects.create(delivery=delivery, status_code=204, duration_ms=12)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=DeliveryStatus.SUCCEEDED,
        attempt_count=1,
        last_status_code=204,
        next_attempt_at=None,
    )
    return delivery


def shown_deliveries(response) -> list[str]:
    return [delivery.id for delivery in response.context["deliveries"]]


def test_the_endpoint_page_leads_with_its_summary_and_deliveries_not_a_form(owner, account):
    endpoint, _ = endpoint_create(
        account=account,
        url=HOOK_URL,
        enabled_events=["server.*", "bot.crashed"],
        actor=Actor(user=owner),
    )
    delivery = failed_delivery(endpoint, status_code=None, error="Could not connect: timeout.")
    response = signed_in(owner).get(detail_url(endpoint))
    body = response.content.decode()
    assert 'name="enabled_events"' not in body and 'name="url"' not in body
    assert f'<a id="edit-link" class="button" href="{edit_url(endpoint)}">Edit</a>' in body
    chips = html_id_text(response, "webhook-events")
    assert '<li class="event-chip"><code>bot.crashed</code></li>' in chips
    assert "event-chip-wildcard" in chips and "<code>server.*</code>" in chips
    # On a phone each delivery is a card: every cell carries its column's name.
    assert '<table id="deliveries" class="table table-stack' in body
    row = re.search(rf'<tr id="delivery-{delivery.id}">.*?</tr>', body, re.S)[0]
    labels = re.findall(r'<td[^>]* data-label="([^"]+)"', row)
    assert labels == ["Status", "Event", "Attempts", "Last response", "Created"]
    assert "Could not connect: timeout." in row and "no answer" in row


def test_all_events_is_one_chip_and_a_long_list_is_folded(owner, account, endpoint):
    response = signed_in(owner).get(detail_url(endpoint))
    assert ">All events</li>" in html_id_text(response, "webhook-events")

    types = [
        "server.created",
        "server.updated",
        "server.crashed",
        "server.deleted",
        "bot.created",
        "bot.crashed",
        "member.added",
        "member.removed",
        "account.updated",
        "user.updated",
    ]
    other, _ = endpoint_create(
        account=account, url=HOOK_URL, enabled_events=types, actor=Actor(user=owner)
    )
    body = signed_in(owner).get(detail_url(other)).content.decode()
    assert "<summary>and 2 more</summary>" in body
    for event_type in types:
        assert f"<code>{event_type}</code>" in body


def test_deliveries_are_filtered_by_status(owner, endpoint, django_assert_max_num_queries):
    creation = endpoint.deliveries.get()  # it subscribes to "*", so to its own creation too
    failed = [failed_delivery(endpoint), failed_delivery(endpoint)]
    pending = endpoint_send_test(endpoint=endpoint, actor=SYSTEM)
    client = signed_in(owner)
    nothing = client.get(detail_url(endpoint), {"status": "succeeded"})
    assert shown_deliveries(nothing) == []
    assert "No succeeded deliveries." in nothing.content.decode()

    succeeded = succeeded_delivery(endpoint)
    with django_assert_max_num_queries(16):
        response = client.get(detail_url(endpoint), {"status": "failed"})
    assert shown_deliveries(response) == [failed[1].id, failed[0].id]
    tabs = html_id_text(response, "delivery-filter")
    assert '<a href="?#deliveries-heading">All <span class="tab-count">5</span></a>' in tabs
    assert (
        '<a href="?status=failed#deliveries-heading" aria-current="page">'
        'Failed <span class="tab-count">2</span></a>'
    ) in tabs
    assert 'Pending <span class="tab-count">2</span>' in tabs
    assert 'Succeeded <span class="tab-count">1</span>' in tabs
    pending_shown = shown_deliveries(client.get(detail_url(endpoint), {"status": "pending"}))
    assert sorted(pending_shown) == sorted([pending.id, creation.id])
    assert shown_deliveries(client.get(detail_url(endpoint), {"status": "succeeded"})) == [
        succeeded.id
    ]
    everything = client.get(detail_url(endpoint), {"status": "lost"})
    assert len(shown_deliveries(everything)) == 5
    assert '<a href="?#deliveries-heading" aria-current="page">All' in everything.content.decode()


def test_a_bad_page_number_shows_the_first_or_the_last_page(owner, endpoint):
    for _ in range(25):
        endpoint_send_test(endpoint=endpoint, actor=SYSTEM)
    client = signed_in(owner)  # 26 with the delivery of its own creation: 2 pages
    for page, number in [("abc", 1), ("2.5", 1), ("", 1), ("99", 2), ("0", 2), ("-1", 2)]:
        response = client.get(detail_url(endpoint), {"page": page})
        assert response.status_code == 200, page
        assert response.context["page_obj"].number == number, page
    last_page = shown_deliveries(client.get(detail_url(endpoint), {"page": "99"}))
    assert last_page == [endpoint.deliveries.last().id]  # the oldest

    # Paging through a filtered list keeps the filter.
    body = client.get(detail_url(endpoint), {"status": "pending"}).content.decode()
    assert 'href="?status=pending&amp;page=2" rel="next"' in body
    empty = client.get(detail_url(endpoint), {"status": "failed", "page": "7"})
    assert empty.status_code == 200 and shown_deliveries(empty) == []


def test_the_endpoint_page_takes_no_form(owner, endpoint):
    response = signed_in(owner).post(detail_url(endpoint), {**NEW_ENDPOINT, "description": "x"})
    assert response.status_code == 405
    endpoint.refresh_from_db()
    assert endpoint.description == "Status page"


def test_disabling_and_enabling(owner, endpoint):
    client = signed_in(owner)
    response = client.post(f"{detail_url(endpoint)}/enable", {"enabled": "false"}, follow=True)
    assert messages_of(response) == ["The endpoint is disabled: no events are sent to it."]
    assert 'id="enable-webhook"' in response.content.decode()
    endpoint.refresh_from_db()
    assert endpoint.enabled is False

    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failure_streak=3)
    client.post(f"{detail_url(endpoint)}/enable", {"enabled": "true"})
    endpoint.refresh_from_db()
    assert (endpoint.enabled, endpoint.failure_streak, endpoint.disabled_reason) == (True, 0, "")


def test_deleting_asks_first(owner, endpoint):
    client = signed_in(owner)
    assert 'id="confirm-delete"' in client.get(f"{detail_url(endpoint)}/delete").content.decode()
    response = client.post(f"{detail_url(endpoint)}/delete", follow=True)
    assert response.redirect_chain == [("/settings/webhooks", 302)]
    assert messages_of(response) == [f"Deleted the webhook endpoint {HOOK_URL}."]
    assert not WebhookEndpoint.objects.exists()
    assert Event.objects.filter(type="webhook_endpoint.deleted").exists()


# --- Who may see and do what ------------------------------------------------------------------


def test_an_outsider_gets_404_for_every_page_and_change(outsider, endpoint):
    delivery = failed_delivery(endpoint)
    client = signed_in(outsider)
    base = detail_url(endpoint)
    for path in [base, f"{base}/edit", f"{base}/rotate", f"{base}/delete"]:
        assert client.get(path).status_code == 404, path
    for path in [
        f"{base}/edit",
        f"{base}/enable",
        f"{base}/test",
        f"{base}/rotate",
        f"{base}/delete",
        f"{base}/deliveries/{delivery.id}/retry",
    ]:
        assert client.post(path, {"enabled": "false", **NEW_ENDPOINT}).status_code == 404, path
    endpoint.refresh_from_db()
    assert endpoint.enabled and endpoint.description == "Status page"
    assert sent_tests_of(endpoint) == 1
    assert HOOK_URL not in client.get("/settings/webhooks").content.decode()


def test_a_developer_manages_webhooks(teammate, account):
    response = signed_in(teammate).post("/settings/webhooks/new", NEW_ENDPOINT)
    assert response["Location"] == "/settings/webhooks/created"
    assert WebhookEndpoint.objects.filter(account=account).count() == 1


@pytest.mark.parametrize("role", [Role.BILLING, Role.SUPPORT])
def test_roles_without_webhooks_read_are_told_their_role_does_not_open_it(account, endpoint, role):
    client = signed_in(MembershipFactory(account=account, role=role).user)
    assert client.get("/settings/webhooks").status_code == 403
    assert client.get(detail_url(endpoint)).status_code == 403
    assert client.post("/settings/webhooks/new", NEW_ENDPOINT).status_code == 403


BUTTONS = [
    'id="new-webhook"',
    'id="send-test"',
    'id="disable-webhook"',
    'id="rotate-link"',
    'id="delete-link"',
    'id="edit-link"',
    'id="edit-webhook"',
    ">Retry</button>",
]


def test_a_viewer_reads_but_gets_no_buttons_and_is_refused(viewer, endpoint):
    delivery = failed_delivery(endpoint)
    client = signed_in(viewer)
    listing = client.get("/settings/webhooks").content.decode()
    detail = client.get(detail_url(endpoint))
    assert detail.status_code == 200
    body = listing + detail.content.decode()
    assert HOOK_URL in body and f'id="delivery-{delivery.id}"' in body
    for button in BUTTONS:
        assert button not in body, button

    base = detail_url(endpoint)
    response = client.post("/settings/webhooks/new", NEW_ENDPOINT, follow=True)
    assert response.redirect_chain == [("/settings/webhooks", 302)]
    assert messages_of(response) == [VIEWER_REFUSED]
    for path in [
        f"{base}/edit",
        f"{base}/enable",
        f"{base}/test",
        f"{base}/rotate",
        f"{base}/delete",
        f"{base}/deliveries/{delivery.id}/retry",
    ]:
        response = client.post(path, {"enabled": "false", **NEW_ENDPOINT}, follow=True)
        assert response.redirect_chain == [(base, 302)], path
        assert messages_of(response) == [VIEWER_REFUSED]
    assert WebhookEndpoint.objects.get() == endpoint
    endpoint.refresh_from_db()
    assert endpoint.enabled and sent_tests_of(endpoint) == 1
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED


def test_a_suspended_account_reads_but_changes_nothing(owner, account, endpoint):
    delivery = failed_delivery(endpoint)
    account_suspend(account=account, reason="Unpaid invoice INV-42", actor=SYSTEM)
    client = signed_in(owner)
    body = (
        client.get("/settings/webhooks").content.decode()
        + client.get(detail_url(endpoint)).content.decode()
    )
    assert "This account is suspended" in body
    for button in BUTTONS:
        assert button not in body, button

    base = detail_url(endpoint)
    for path in [
        "/settings/webhooks/new",
        f"{base}/edit",
        f"{base}/enable",
        f"{base}/test",
        f"{base}/rotate",
        f"{base}/delete",
        f"{base}/deliveries/{delivery.id}/retry",
    ]:
        response = client.post(path, {"enabled": "false", **NEW_ENDPOINT}, follow=True)
        assert messages_of(response) == [SUSPENDED], path
    assert WebhookEndpoint.objects.get() == endpoint
    endpoint.refresh_from_db()
    assert endpoint.enabled and sent_tests_of(endpoint) == 1


# --- Admin ------------------------------------------------------------------------------------


def test_admin_shows_endpoints_and_deliveries_without_secrets(staff_client, created):
    endpoint, secret = created
    delivery = failed_delivery(endpoint, excerpt="nope")
    pages = [
        staff_client.get(admin_url(WebhookEndpoint, "changelist"), {"q": "127.0.0.1"}),
        staff_client.get(admin_url(WebhookEndpoint, "change", endpoint.id)),
        staff_client.get(admin_url(WebhookDelivery, "changelist"), {"status": "failed"}),
        staff_client.get(admin_url(WebhookDelivery, "change", delivery.id)),
    ]
    for page in pages:
        assert page.status_code == 200
        body = page.content.decode()
        assert secret not in body and endpoint.secret_encrypted not in body
        assert "secret_encrypted" not in body
    assert HOOK_URL in pages[0].content.decode()
    assert "nope" in pages[3].content.decode()
    assert staff_client.get(admin_url(WebhookEndpoint, "add")).status_code == 403
    assert staff_client.get(admin_url(WebhookDelivery, "add")).status_code == 403


def test_admin_changes_enabled_through_the_service(staff_client, endpoint):
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        enabled=False, disabled_reason="Every delivery failed for 5 days.", failure_streak=9
    )
    response = staff_client.post(
        admin_url(WebhookEndpoint, "change", endpoint.id),
        {"description": "Re-enabled by staff", "enabled": "on"},
    )
    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.enabled and endpoint.failure_streak == 0 and endpoint.disabled_reason == ""
    assert endpoint.description == "Re-enabled by staff"
    assert Event.objects.filter(type="webhook_endpoint.updated").count() == 1
