"""Webhook delivery end to end: a real HTTP receiver on 127.0.0.1, the real database and worker.

Most tests drive ``webhook_deliver`` themselves with a clock of their own (``now=``), reading the
next attempt's time from the database, so a schedule of hours runs in milliseconds.
"""

import base64
import json
from collections import Counter
from datetime import timedelta

import pytest
from django.core import mail
from django.test import override_settings
from django.utils import timezone
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from accounts.actors import SYSTEM, Actor
from accounts.roles import SCOPES, Role
from accounts.services import api_key_create
from events.models import Event
from hosting.errors import ValidationFailed
from tests.servers.helpers import run_worker
from tests.webhooks.receiver import Answer, Receiver, verify
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.services import (
    EXCERPT_BYTES,
    MAX_RESPONSE_BYTES,
    RETRY_SCHEDULE,
    endpoint_create,
    endpoint_rotate_secret,
    endpoint_send_test,
    send,
    signature_header,
    webhook_deliver,
)

pytestmark = pytest.mark.django_db
LOCAL = override_settings(WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE_TARGETS=True)


@pytest.fixture
def receiver():
    with Receiver() as running:
        yield running


def add_endpoint(account, receiver, path="/hook", events=("api_key.*",)) -> tuple:
    """An endpoint set up by the account's owner, so it may receive every member's key events."""
    endpoint, secret = endpoint_create(
        account=account,
        url=receiver.url(path),
        enabled_events=list(events),
        actor=Actor(user=account.memberships.get(role=Role.OWNER).user),
    )
    receiver.set_secret(secret, path)
    return endpoint, secret


def new_event(account, owner) -> Event:
    """One change in the account: a new API key (an ``api_key.created`` event)."""
    api_key, _ = api_key_create(account=account, user=owner, name="Deploy", scopes=list(SCOPES))
    return Event.objects.get(type="api_key.created", object_id=api_key.id)


def delivery_of(event, endpoint) -> WebhookDelivery:
    return WebhookDelivery.objects.get(event=event, endpoint=endpoint)


def deliver_until_settled(delivery, receiver, start, limit=20) -> list[WebhookAttempt]:
    """Attempt at ``start``, then at every ``next_attempt_at`` the database names, until done."""
    at = start
    for _ in range(limit):
        receiver.clock = lambda at=at: at
        webhook_deliver(delivery_id=delivery.id, now=at)
        delivery.refresh_from_db()
        if delivery.status != DeliveryStatus.PENDING:
            break
        at = delivery.next_attempt_at
    return list(delivery.attempts.order_by("created_at"))


# --- Signing and payload -------------------------------------------------------------------


@LOCAL
def test_delivery_is_signed_with_the_standard_webhooks_scheme(account, owner, receiver):
    endpoint, secret = add_endpoint(account, receiver)
    event = new_event(account, owner)
    delivery = delivery_of(event, endpoint)

    webhook_deliver(delivery_id=delivery.id)

    [request] = receiver.requests
    assert request.verified, request.error
    payload = Webhook(secret).verify(request.body, request.headers)
    assert request.headers["webhook-id"] == event.id == payload["id"]
    assert payload["id"].startswith("evt_")
    assert set(payload) == {"id", "type", "created_at", "data"}
    assert payload["type"] == "api_key.created"
    assert payload["created_at"] == event.created_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert set(payload["data"]) == {"object", "previous_attributes"}
    assert payload["data"]["object"]["id"] == event.object_id
    assert payload["data"]["previous_attributes"] == {}
    assert request.headers["content-type"] == "application/json"
    assert request.headers["webhook-signature"].startswith("v1,")
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.SUCCEEDED and delivery.attempt_count == 1

    # A tampered body fails verification.
    tampered = request.body.replace(b'"api_key.created"', b'"api_key.revoked"')
    assert tampered != request.body
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(tampered, request.headers)
    # So does another endpoint's secret.
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + base64.b64encode(b"x" * 24).decode()).verify(
            request.body, request.headers
        )
    # A request signed more than 5 minutes ago is refused (a replay), however well signed.
    with pytest.raises(WebhookVerificationError, match="too old"):
        verify(secret, request.body, request.headers, at=timezone.now() + timedelta(minutes=6))
    old = timezone.now() - timedelta(minutes=6)
    old_headers = {
        **request.headers,
        "webhook-timestamp": str(int(old.timestamp())),
        "webhook-signature": signature_header(endpoint, event.id, old, request.body.decode()),
    }
    with pytest.raises(WebhookVerificationError, match="too old"):
        Webhook(secret).verify(request.body, old_headers)


# --- The outbox ----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@LOCAL
def test_changes_made_while_no_worker_runs_are_all_delivered_once(
    account, owner, receiver, monkeypatch
):
    # Retries come due at once, so that one worker run also makes the retry.
    monkeypatch.setattr("webhooks.services.delivery.RETRY_SCHEDULE", [0] * len(RETRY_SCHEDULE))
    account.max_api_keys = 100
    account.save()
    first, _ = add_endpoint(account, receiver, "/a")
    second, _ = add_endpoint(account, receiver, "/b")
    receiver.script([500], path="/a")  # the first request to /a fails

    events = [new_event(account, owner) for _ in range(50)]

    assert receiver.requests == []  # no worker: nothing sent, everything waiting in the outbox
    assert WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING).count() == 100

    run_worker()

    assert len(receiver.requests) == 101
    assert all(request.verified for request in receiver.requests)
    event_ids = {event.id for event in events}
    for path in ("/a", "/b"):
        delivered = Counter(r.webhook_id for r in receiver.to(path) if r.answered == 200)
        assert set(delivered) == event_ids
        assert set(delivered.values()) == {1}
    [failed] = [r for r in receiver.requests if r.answered == 500]
    retried = [r for r in receiver.to("/a") if r.webhook_id == failed.webhook_id]
    assert [r.answered for r in retried] == [500, 200]  # the retry carries the same webhook-id
    assert retried[0].body == retried[1].body
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"succeeded"}
    assert delivery_of(Event.objects.get(pk=failed.webhook_id), first).attempt_count == 2
    assert WebhookDelivery.objects.filter(endpoint=second, attempt_count=1).count() == 50


# --- Retries -------------------------------------------------------------------------------


@LOCAL
def test_retries_follow_the_schedule_until_the_endpoint_answers(account, owner, receiver):
    add_endpoint(account, receiver)
    receiver.script([Answer(500, body=b"e" * 5000), 500, 500, 200])
    delivery = WebhookDelivery.objects.get(event=new_event(account, owner))
    start = timezone.now()

    # Called before its time, a delivery makes no attempt.
    webhook_deliver(delivery_id=delivery.id, now=start)
    delivery.refresh_from_db()
    webhook_deliver(delivery_id=delivery.id, now=delivery.next_attempt_at - timedelta(seconds=1))
    assert delivery.attempts.count() == 1

    attempts = deliver_until_settled(delivery, receiver, delivery.next_attempt_at)

    assert [a.status_code for a in attempts] == [500, 500, 500, 200]
    for attempt, after, expected in zip(attempts, attempts[1:], [5, 300, 1800], strict=False):
        spacing = (after.created_at - attempt.created_at).total_seconds()
        assert expected * 0.9 <= spacing <= expected * 1.1
        assert attempt.next_retry_at == after.created_at
    assert attempts[-1].next_retry_at is None
    assert len(attempts[0].response_excerpt) == EXCERPT_BYTES
    assert all(0 <= a.duration_ms < 5000 and not a.error for a in attempts)
    assert delivery.status == DeliveryStatus.SUCCEEDED
    assert delivery.delivered_at == attempts[-1].created_at
    assert delivery.attempt_count == 4 and delivery.last_status_code == 200
    assert len(receiver.requests) == 4
    assert {r.webhook_id for r in receiver.requests} == {delivery.event_id}
    assert all(r.verified for r in receiver.requests), [r.error for r in receiver.requests]
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.failure_streak == 0 and endpoint.failing_since is None


@LOCAL
def test_retry_after_is_honoured(account, owner, receiver):
    add_endpoint(account, receiver)
    receiver.script([Answer(503, headers={"Retry-After": "120"})])
    delivery = WebhookDelivery.objects.get(event=new_event(account, owner))
    start = timezone.now()

    webhook_deliver(delivery_id=delivery.id, now=start)

    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING and delivery.last_status_code == 503
    assert delivery.next_attempt_at - start >= timedelta(seconds=120)
    assert delivery.attempts.get().next_retry_at == delivery.next_attempt_at


@LOCAL
def test_a_delivery_is_given_up_after_ten_attempts(account, owner, receiver):
    endpoint, _ = add_endpoint(account, receiver)
    receiver.default = 500
    delivery = WebhookDelivery.objects.get(event=new_event(account, owner))

    attempts = deliver_until_settled(delivery, receiver, timezone.now())

    assert len(attempts) == len(RETRY_SCHEDULE) + 1 == 10
    assert len(receiver.requests) == 10
    assert delivery.status == DeliveryStatus.FAILED and delivery.next_attempt_at is None
    assert attempts[-1].next_retry_at is None
    assert all(a.next_retry_at for a in attempts[:-1])
    endpoint.refresh_from_db()
    assert endpoint.enabled  # about 3 days of failures: not yet 5
    assert endpoint.failure_streak == 10


# --- Disabling -----------------------------------------------------------------------------


@LOCAL
def test_410_disables_the_endpoint_at_once(
    account, owner, receiver, django_capture_on_commit_callbacks
):
    endpoint, _ = add_endpoint(account, receiver)
    first = delivery_of(new_event(account, owner), endpoint)
    second = delivery_of(new_event(account, owner), endpoint)
    receiver.script([410])

    with django_capture_on_commit_callbacks(execute=True):
        webhook_deliver(delivery_id=first.id)

    endpoint.refresh_from_db()
    first.refresh_from_db()
    assert not endpoint.enabled and "410" in endpoint.disabled_reason
    assert first.status == DeliveryStatus.FAILED and first.next_attempt_at is None
    disabled = Event.objects.get(type="webhook_endpoint.disabled")
    assert disabled.object_id == endpoint.id
    assert disabled.data["previous_attributes"]["enabled"] is True
    [message] = mail.outbox
    assert message.to == [owner.email]
    assert endpoint.url in message.body and endpoint.id in message.body

    # Further deliveries are not attempted, and new events make none for it.
    webhook_deliver(delivery_id=second.id)
    second.refresh_from_db()
    assert second.status == DeliveryStatus.FAILED and second.attempt_count == 0
    new_event(account, owner)
    assert endpoint.deliveries.count() == 2
    assert len(receiver.requests) == 1


@LOCAL
def test_failing_for_five_days_disables_the_endpoint(
    account, owner, receiver, django_capture_on_commit_callbacks
):
    endpoint, _ = add_endpoint(account, receiver)
    receiver.default = 500
    start = timezone.now() + timedelta(seconds=5)  # after the events below are recorded

    for day in (0, 1, 4):
        delivery = delivery_of(new_event(account, owner), endpoint)
        webhook_deliver(delivery_id=delivery.id, now=start + timedelta(days=day))
        endpoint.refresh_from_db()
        assert endpoint.enabled and endpoint.failing_since == start

    delivery = delivery_of(new_event(account, owner), endpoint)
    with django_capture_on_commit_callbacks(execute=True):
        webhook_deliver(delivery_id=delivery.id, now=start + timedelta(days=5))

    endpoint.refresh_from_db()
    delivery.refresh_from_db()
    assert not endpoint.enabled and "5 days" in endpoint.disabled_reason
    assert delivery.status == DeliveryStatus.FAILED
    assert Event.objects.filter(type="webhook_endpoint.disabled", object_id=endpoint.id).exists()
    assert [m.to for m in mail.outbox] == [[owner.email]]


@LOCAL
def test_a_success_ends_the_failure_streak(account, owner, receiver):
    endpoint, _ = add_endpoint(account, receiver)
    receiver.script([500, 200, 500])
    start = timezone.now() + timedelta(seconds=5)
    for day in (0, 3, 6):
        delivery = delivery_of(new_event(account, owner), endpoint)
        webhook_deliver(delivery_id=delivery.id, now=start + timedelta(days=day))
    endpoint.refresh_from_db()
    assert endpoint.enabled
    assert endpoint.failing_since == start + timedelta(days=6) and endpoint.failure_streak == 1


# --- Safety --------------------------------------------------------------------------------


@override_settings(WEBHOOKS_ALLOW_HTTP=False, WEBHOOKS_ALLOW_PRIVATE_TARGETS=False)
@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/hook",
        "https://127.0.0.1/hook",
        "https://10.1.2.3/hook",
        "https://169.254.169.254/latest/meta-data/",
        "https://[::1]/hook",
        "https://localhost/hook",
        "https://user:pass@example.com/hook",
        "ftp://example.com/hook",
    ],
)
def test_unsafe_urls_are_refused(account, url):
    with pytest.raises(ValidationFailed) as refused:
        endpoint_create(account=account, url=url, enabled_events=["*"], actor=SYSTEM)
    assert refused.value.status == 400
    assert [f["name"] for f in refused.value.details["fields"]] == ["url"]
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize("switched_off", ["WEBHOOKS_ALLOW_PRIVATE_TARGETS", "WEBHOOKS_ALLOW_HTTP"])
def test_targets_are_checked_again_at_every_attempt(account, owner, receiver, switched_off):
    with LOCAL:
        endpoint, _ = add_endpoint(account, receiver)
        delivery = delivery_of(new_event(account, owner), endpoint)

    with LOCAL, override_settings(**{switched_off: False}):
        webhook_deliver(delivery_id=delivery.id)

    attempt = delivery.attempts.get()
    assert attempt.status_code is None
    assert ("127.0.0.1" if switched_off == "WEBHOOKS_ALLOW_PRIVATE_TARGETS" else "https") in (
        attempt.error
    )
    assert receiver.requests == []
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING and attempt.next_retry_at is not None


@LOCAL
def test_a_host_name_is_resolved_and_checked_at_delivery(account, owner, receiver):
    endpoint, _ = endpoint_create(
        account=account,
        url=f"http://localhost:{receiver.port}/hook",
        enabled_events=["api_key.*"],
        actor=Actor(user=owner),
    )
    delivery = delivery_of(new_event(account, owner), endpoint)

    with override_settings(WEBHOOKS_ALLOW_PRIVATE_TARGETS=False):
        webhook_deliver(delivery_id=delivery.id)

    assert "private, loopback or reserved" in delivery.attempts.get().error
    assert receiver.requests == []


@LOCAL
def test_redirects_are_not_followed(account, owner, receiver):
    endpoint, _ = add_endpoint(account, receiver)
    receiver.script([Answer(302, headers={"Location": receiver.url("/elsewhere")})])
    delivery = delivery_of(new_event(account, owner), endpoint)

    webhook_deliver(delivery_id=delivery.id)

    attempt = delivery.attempts.get()
    assert attempt.status_code == 302 and attempt.next_retry_at is not None
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING  # a redirect is a failed attempt
    assert [r.path for r in receiver.requests] == ["/hook"]


@LOCAL
def test_a_large_answer_is_read_only_to_64_kb(account, owner, receiver):
    endpoint, _ = add_endpoint(account, receiver)
    huge = 64 * 1024 * 1024
    receiver.script([Answer(200, stream_bytes=huge), Answer(200, stream_bytes=huge)])
    delivery = delivery_of(new_event(account, owner), endpoint)

    webhook_deliver(delivery_id=delivery.id)

    attempt = delivery.attempts.get()
    assert attempt.status_code == 200 and len(attempt.response_excerpt) == EXCERPT_BYTES
    assert attempt.duration_ms < 5000
    [request] = receiver.requests
    assert request.finished.wait(10)
    assert request.bytes_sent < huge  # the service hung up instead of reading it all

    status, content, _ = send(receiver.url(), {"content-type": "application/json"}, "{}")
    assert status == 200 and len(content) == MAX_RESPONSE_BYTES


# --- Secret rotation and test events -------------------------------------------------------


@LOCAL
def test_both_secrets_sign_for_24_hours_after_a_rotation(account, owner, receiver):
    endpoint, old_secret = add_endpoint(account, receiver)
    endpoint, new_secret = endpoint_rotate_secret(endpoint=endpoint, actor=SYSTEM)
    assert new_secret != old_secret
    receiver.set_secret(new_secret, "/hook")
    first = delivery_of(new_event(account, owner), endpoint)
    second = delivery_of(new_event(account, owner), endpoint)
    start = timezone.now()

    webhook_deliver(delivery_id=first.id, now=start)
    later = start + timedelta(hours=25)
    receiver.clock = lambda: later
    webhook_deliver(delivery_id=second.id, now=later)

    during, after = receiver.requests
    assert during.verified and after.verified
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    assert verify(old_secret, during.body, during.headers, at=start)
    assert verify(new_secret, during.body, during.headers, at=start)
    assert len(after.headers["webhook-signature"].split(" ")) == 1
    assert verify(new_secret, after.body, after.headers, at=later)
    with pytest.raises(WebhookVerificationError):
        verify(old_secret, after.body, after.headers, at=later)


@LOCAL
def test_a_test_event_reaches_only_its_endpoint(account, owner, receiver):
    chosen, _ = add_endpoint(account, receiver, "/a", events=["server.*"])
    add_endpoint(account, receiver, "/b", events=["*"])

    delivery = endpoint_send_test(endpoint=chosen, actor=SYSTEM)
    for pending in WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING):
        webhook_deliver(delivery_id=pending.id)

    assert delivery.endpoint_id == chosen.id
    assert WebhookDelivery.objects.filter(event=delivery.event).count() == 1
    [request] = receiver.to("/a")
    assert request.verified
    assert json.loads(request.body)["type"] == "webhook.test"
    assert all(r.json()["type"] != "webhook.test" for r in receiver.to("/b"))


@LOCAL
def test_an_endpoint_deleted_during_an_attempt_ends_it_quietly(
    account, owner, receiver, monkeypatch
):
    endpoint, _ = add_endpoint(account, receiver)
    delivery = delivery_of(new_event(account, owner), endpoint)

    def send_then_delete(*args):
        answer = send(*args)
        WebhookEndpoint.objects.filter(pk=endpoint.pk).delete()
        return answer

    monkeypatch.setattr("webhooks.services.delivery.send", send_then_delete)
    assert webhook_deliver(delivery_id=delivery.id) is None
    assert len(receiver.requests) == 1
    assert not WebhookDelivery.objects.exists()
