"""Webhook endpoints and the delivery of events to them (Standard Webhooks, CONTRACT §9).

The outbox: ``record_event`` calls ``deliveries_for_event`` in the transaction that wrote the
event, so each delivery row and its queued task commit with the change that caused them and
nothing is lost when the worker or the receiver is down. The worker's ``webhook_deliver`` makes
one attempt, records it, and either finishes the delivery or schedules the next attempt.
"""

import base64
import functools
import ipaddress
import json
import random
import secrets
import socket
import ssl
import time
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.tasks import TaskResultStatus
from django.utils import timezone
from django_tasks_db.models import DBTaskResult
from standardwebhooks.webhooks import Webhook

from accounts.models import Account, Membership
from accounts.roles import Role, expand_implied, scopes_allowed_for
from events.catalogue import is_event_pattern, pattern_matches
from events.models import Event
from events.services import SYSTEM, Actor, changed_attributes, record_event
from events.visibility import can_see
from hosting.errors import Conflict, QuotaExceeded, ValidationFailed
from hosting.secrets_box import decrypt_secret, encrypt_secret
from webhooks.api.serializers import WebhookEndpointSerializer
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.tasks import deliver_webhook

# Seconds before attempt 2, 3, … (CONTRACT §9 / the webhooks issue); ±10% jitter.
RETRY_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]
DISABLE_AFTER = timedelta(days=5)
SECRET_OVERLAP = timedelta(hours=24)
CONNECT_TIMEOUT, TOTAL_TIMEOUT = 5.0, 15.0
MAX_RESPONSE_BYTES = 64 * 1024
EXCERPT_BYTES = 1024
USER_AGENT = "HostingManagement-Webhooks/1.0"


def _field_error(name: str, code: str, message: str) -> ValidationFailed:
    return ValidationFailed(
        message, details={"fields": [{"name": name, "code": code, "message": message}]}
    )


# --- Event types ---------------------------------------------------------------------------


def _clean_patterns(patterns: Any) -> list[str]:
    if not isinstance(patterns, list) or not patterns:
        raise _field_error(
            "enabled_events", "required", 'List the event types to send, or ["*"] for all.'
        )
    for index, pattern in enumerate(patterns):
        if not is_event_pattern(pattern):
            raise _field_error(
                f"enabled_events.{index}", "invalid_choice", f"Unknown event type {pattern!r}."
            )
    return sorted(set(patterns))


# --- Where requests may go -----------------------------------------------------------------


class UnsafeTarget(Exception):
    """The URL or the address it resolves to may not be sent to."""


def _refused_address(address: ipaddress._BaseAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or not address.is_global
    )


def check_url(url: str) -> str:
    """The URL's host if it is an allowed scheme and host; raise ``UnsafeTarget`` otherwise."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port outside 0-65535
    except ValueError:
        raise UnsafeTarget("The URL is not valid (check its host and port).") from None
    allowed = {"https", "http"} if settings.WEBHOOKS_ALLOW_HTTP else {"https"}
    if parts.scheme not in allowed:
        raise UnsafeTarget(
            "Webhook URLs must use https://."
            if not settings.WEBHOOKS_ALLOW_HTTP
            else "Webhook URLs must use http:// or https://."
        )
    if not parts.hostname or parts.username or parts.password:
        raise UnsafeTarget("The URL needs a host and must not carry credentials.")
    return parts.hostname


def resolve_target(url: str) -> tuple[str, list[str]]:
    """Resolve the host now (at every attempt) and refuse private and special addresses.

    Returns the host and its allowed addresses; the request is then sent to one of these very
    addresses, so a DNS answer cannot change between the check and the connection.
    """
    host = check_url(url)
    port = urlsplit(url).port or (443 if url.startswith("https") else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise UnsafeTarget(f"The host {host} does not resolve.") from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS:
        refused = [a for a in addresses if _refused_address(ipaddress.ip_address(a))]
        if refused:
            raise UnsafeTarget(
                f"{host} resolves to {refused[0]}, a private, loopback or reserved address."
            )
    return host, addresses


def _validate_url(url: Any) -> str:
    if not isinstance(url, str) or len(url) > 2000:
        raise _field_error("url", "invalid", "url must be an https:// URL.")
    try:
        resolve_target(url)
    except UnsafeTarget as refused:
        raise _field_error("url", "unsafe_target", str(refused)) from None
    return url


# --- Endpoints -----------------------------------------------------------------------------


def _new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def endpoint_representation(endpoint: WebhookEndpoint) -> dict:
    return dict(WebhookEndpointSerializer(endpoint).data)


def _record(endpoint: WebhookEndpoint, event_type: str, actor: Actor, previous=None) -> None:
    record_event(
        type=event_type, account=endpoint.account, object_type="webhook_endpoint",
        obj=endpoint_representation(endpoint), actor=actor, previous_attributes=previous,
    )  # fmt: skip


@transaction.atomic
def endpoint_create(
    *,
    account: Account,
    url: Any,
    enabled_events: Any,
    description: str = "",
    enabled: bool = True,
    actor: Actor,
) -> tuple[WebhookEndpoint, str]:
    """Create an endpoint and return it with its secret (shown this once).

    The endpoint acts as the actor's user: it receives the events that user may see.
    """
    url = _validate_url(url)
    patterns = _clean_patterns(enabled_events)
    Account.objects.select_for_update().filter(pk=account.pk).first()
    if account.webhook_endpoints.count() >= settings.WEBHOOKS_MAX_ENDPOINTS:
        raise QuotaExceeded(
            f"An account may have {settings.WEBHOOKS_MAX_ENDPOINTS} webhook endpoints.",
            details={"limit": settings.WEBHOOKS_MAX_ENDPOINTS, "quota": "webhook_endpoints"},
        )
    secret = _new_secret()
    endpoint = WebhookEndpoint.objects.create(
        account=account, url=url, enabled_events=patterns, description=description.strip()[:500],
        enabled=enabled, secret_encrypted=encrypt_secret(secret), created_by=actor.user,
    )  # fmt: skip
    _record(endpoint, "webhook_endpoint.created", actor)
    return endpoint, secret


@transaction.atomic
def endpoint_update(*, endpoint: WebhookEndpoint, actor: Actor, **changes: Any) -> WebhookEndpoint:
    """Change ``url``, ``description``, ``enabled_events`` or ``enabled`` (re-enabling clears
    the failure streak).

    Whoever points the endpoint at a new URL is the one it acts as from then on: otherwise a
    member could send to their own server everything a more privileged creator may see.
    """
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    before = endpoint_representation(endpoint)
    if "url" in changes:
        url = _validate_url(changes["url"])
        if url != endpoint.url:
            endpoint.url, endpoint.created_by = url, actor.user
    if "description" in changes:
        endpoint.description = str(changes["description"]).strip()[:500]
    if "enabled_events" in changes:
        endpoint.enabled_events = _clean_patterns(changes["enabled_events"])
    if "enabled" in changes:
        enabled = bool(changes["enabled"])
        if enabled and not endpoint.enabled:
            endpoint.disabled_reason, endpoint.failing_since, endpoint.failure_streak = "", None, 0
        endpoint.enabled = enabled
    endpoint.save()
    after = endpoint_representation(endpoint)
    previous = changed_attributes(before, after)
    previous.pop("updated_at", None)
    if previous:
        _record(endpoint, "webhook_endpoint.updated", actor, previous)
    return endpoint


@transaction.atomic
def endpoint_delete(*, endpoint: WebhookEndpoint, actor: Actor) -> None:
    representation = endpoint_representation(endpoint)
    account = endpoint.account
    endpoint.delete()
    record_event(
        type="webhook_endpoint.deleted", account=account, object_type="webhook_endpoint",
        obj=representation, actor=actor,
    )  # fmt: skip


@transaction.atomic
def endpoint_rotate_secret(
    *, endpoint: WebhookEndpoint, actor: Actor
) -> tuple[WebhookEndpoint, str]:
    """A new secret; the old one keeps signing beside it for 24 hours (two signatures)."""
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    secret = _new_secret()
    endpoint.previous_secret_encrypted = endpoint.secret_encrypted
    endpoint.previous_secret_expires_at = timezone.now() + SECRET_OVERLAP
    endpoint.secret_encrypted = encrypt_secret(secret)
    endpoint.save()
    _record(endpoint, "webhook_endpoint.updated", actor, {"secret_rotated_at": None})
    return endpoint, secret


@transaction.atomic
def endpoint_send_test(*, endpoint: WebhookEndpoint, actor: Actor) -> WebhookDelivery:
    """A ``webhook.test`` event delivered to this endpoint only, whatever it subscribes to."""
    event = record_event(
        type="webhook.test", account=endpoint.account, object_type="webhook_endpoint",
        obj=endpoint_representation(endpoint), actor=actor,
    )  # fmt: skip
    return _create_delivery(endpoint, event)


# --- Fan-out -------------------------------------------------------------------------------


def _create_delivery(endpoint: WebhookEndpoint, event: Event) -> WebhookDelivery:
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint, event=event, next_attempt_at=timezone.now()
    )
    deliver_webhook.enqueue(delivery.id)
    return delivery


# An endpoint whose creator is unknown, deactivated or no longer a member sees what a viewer sees.
UNKNOWN_CREATOR_ROLE = Role.VIEWER


def _creator_may_see(endpoint: WebhookEndpoint, event: Event) -> bool:
    role = endpoint.creator_role or UNKNOWN_CREATOR_ROLE
    scopes = expand_implied(scopes_allowed_for(role, is_staff=False))
    return can_see(event, role=role, user_id=endpoint.created_by_id, scopes=scopes)


def deliveries_for_event(event: Event) -> list[WebhookDelivery]:
    """Queue the event for every enabled endpoint of its account that subscribes to its type
    and whose creator may see it with their current role (``events.visibility``).

    One query reads the endpoints with their creators' roles, however many there are.
    """
    if event.account_id is None or event.type == "webhook.test":
        return []
    creator_role = Membership.objects.filter(
        account_id=OuterRef("account_id"), user_id=OuterRef("created_by_id"), user__is_active=True
    ).values("role")[:1]
    endpoints = WebhookEndpoint.objects.filter(account_id=event.account_id, enabled=True).annotate(
        creator_role=Subquery(creator_role)
    )
    return [
        _create_delivery(endpoint, event)
        for endpoint in endpoints
        if any(pattern_matches(pattern, event.type) for pattern in endpoint.enabled_events)
        and _creator_may_see(endpoint, event)
    ]


@transaction.atomic
def delivery_retry(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a delivery again now (a person pressed retry): same event, same ``webhook-id``."""
    delivery = WebhookDelivery.objects.select_for_update().get(pk=delivery.pk)
    if delivery.status == DeliveryStatus.PENDING and delivery.attempt_count == 0:
        raise Conflict("This delivery has not been attempted yet.")
    delivery.status = DeliveryStatus.PENDING
    delivery.next_attempt_at = timezone.now()
    delivery.save(update_fields=["status", "next_attempt_at"])
    deliver_webhook.enqueue(delivery.id)
    return delivery


# --- Delivery ------------------------------------------------------------------------------


def payload_of(event: Event) -> str:
    """The body: ``{"id", "type", "created_at", "data": {"object", "previous_attributes"}}``."""
    body = {
        "id": event.id,
        "type": event.type,
        "created_at": event.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "data": event.data,
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def signature_header(endpoint: WebhookEndpoint, msg_id: str, at: datetime, body: str) -> str:
    """``v1,<sig>`` for the secret, plus the previous secret's while its overlap lasts."""
    secrets_in_use = [decrypt_secret(endpoint.secret_encrypted)]
    if (
        endpoint.previous_secret_encrypted
        and endpoint.previous_secret_expires_at
        and (endpoint.previous_secret_expires_at > at)
    ):
        secrets_in_use.append(decrypt_secret(endpoint.previous_secret_encrypted))
    return " ".join(Webhook(secret).sign(msg_id, at, body) for secret in secrets_in_use)


def next_retry_delay(attempt_count: int, retry_after: float | None) -> float | None:
    """Seconds until the next attempt after ``attempt_count`` failed ones; None: give up."""
    if attempt_count > len(RETRY_SCHEDULE):
        return None
    delay = RETRY_SCHEDULE[attempt_count - 1] * random.uniform(0.9, 1.1)  # noqa: S311 - jitter
    if retry_after is not None:
        delay = max(delay, min(retry_after, RETRY_SCHEDULE[-1]))
    return delay


def _retry_after_seconds(response: httpx.Response, now: datetime) -> float | None:
    value = response.headers.get("retry-after")
    if not value:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        return max(0.0, (parsedate_to_datetime(value) - now).total_seconds())
    except (TypeError, ValueError):
        return None


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every request: building one (loading the CA bundle) costs
    about 25 ms, which a new ``httpx.Client`` per attempt would otherwise pay every time."""
    return httpx.create_ssl_context(trust_env=False)


def send(url: str, headers: dict[str, str], body: str) -> tuple[int, bytes, httpx.Response]:
    """POST to the URL through one of its checked addresses; at most 64 KB of answer is read."""
    host, addresses = resolve_target(url)
    parts = urlsplit(url)
    address = addresses[0]
    netloc = f"[{address}]" if ":" in address else address
    if parts.port:
        netloc += f":{parts.port}"
    pinned = parts._replace(netloc=netloc).geturl()
    timeout = httpx.Timeout(TOTAL_TIMEOUT, connect=CONNECT_TIMEOUT)
    request_headers = {**headers, "Host": parts.netloc.rsplit("@", 1)[-1]}
    deadline = time.monotonic() + TOTAL_TIMEOUT
    with httpx.Client(
        timeout=timeout, follow_redirects=False, trust_env=False, verify=_tls_context()
    ) as client:
        request = client.build_request(
            "POST", pinned, content=body.encode(), headers=request_headers,
            extensions={"sni_hostname": host},
        )  # fmt: skip
        response = client.send(request, stream=True)
        try:
            received = bytearray()
            for chunk in response.iter_bytes():
                received += chunk
                if len(received) >= MAX_RESPONSE_BYTES or time.monotonic() > deadline:
                    break
        finally:
            response.close()
    return response.status_code, bytes(received[:MAX_RESPONSE_BYTES]), response


def webhook_deliver(*, delivery_id: str, now: datetime | None = None) -> WebhookDelivery | None:
    """Make one attempt of a delivery and settle what follows. ``now`` is for tests' clocks."""
    now = now or timezone.now()
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update()
            .select_related("endpoint", "event")
            .filter(pk=delivery_id)
            .first()
        )
        if delivery is None or delivery.status != DeliveryStatus.PENDING:
            return delivery
        if delivery.next_attempt_at and delivery.next_attempt_at > now:
            return delivery  # a later task is scheduled for it
        endpoint = delivery.endpoint
        if not endpoint.enabled:
            delivery.status = DeliveryStatus.FAILED
            delivery.save(update_fields=["status"])
            return delivery
        # Claim this attempt so a duplicate task run cannot send it twice at the same time.
        delivery.attempt_count += 1
        delivery.next_attempt_at = now + timedelta(seconds=TOTAL_TIMEOUT * 4)
        delivery.save(update_fields=["attempt_count", "next_attempt_at"])
    body = payload_of(delivery.event)
    headers = {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": delivery.event_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature_header(endpoint, delivery.event_id, now, body),
    }
    started = time.monotonic()
    status_code, excerpt, error, retry_after = None, b"", "", None
    try:
        status_code, content, response = send(endpoint.url, headers, body)
        excerpt = content[:EXCERPT_BYTES]
        retry_after = _retry_after_seconds(response, now)
    except UnsafeTarget as refused:
        error = str(refused)
    except httpx.TimeoutException:
        error = f"No answer within {TOTAL_TIMEOUT:.0f} seconds."
    except httpx.HTTPError as failure:
        error = f"Could not connect: {type(failure).__name__}."
    duration_ms = int((time.monotonic() - started) * 1000)
    return _settle(delivery.id, now, status_code, excerpt, error, retry_after, duration_ms)


@transaction.atomic
def _settle(delivery_id, now, status_code, excerpt, error, retry_after, duration_ms):
    delivery = WebhookDelivery.objects.select_for_update().filter(pk=delivery_id).first()
    if delivery is None:
        return None  # the endpoint (or the event) was deleted during the attempt
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=delivery.endpoint_id)
    ok = status_code is not None and 200 <= status_code < 300
    attempt = WebhookAttempt(
        delivery=delivery, created_at=now, status_code=status_code, duration_ms=duration_ms,
        response_excerpt=excerpt.decode("utf-8", "replace"), error=error[:500],
    )  # fmt: skip
    delivery.last_status_code = status_code
    endpoint.last_delivery_at, endpoint.last_delivery_status = now, status_code
    if ok:
        delivery.status, delivery.delivered_at, delivery.next_attempt_at = "succeeded", now, None
        endpoint.failing_since, endpoint.failure_streak = None, 0
    else:
        endpoint.failure_streak += 1
        endpoint.failing_since = endpoint.failing_since or now
        if status_code == 410:
            _disable(endpoint, "The endpoint answered 410 Gone.")
        elif now - endpoint.failing_since >= DISABLE_AFTER:
            _disable(endpoint, "Every delivery failed for 5 days.")
        delay = next_retry_delay(delivery.attempt_count, retry_after) if endpoint.enabled else None
        if delay is None:
            delivery.status, delivery.next_attempt_at = "failed", None
        else:
            delivery.next_attempt_at = attempt.next_retry_at = now + timedelta(seconds=delay)
            deliver_webhook.using(run_after=delivery.next_attempt_at).enqueue(delivery.id)
    attempt.save()
    delivery.save()
    endpoint.save()
    return delivery


def _disable(endpoint: WebhookEndpoint, reason: str) -> None:
    """Turn an endpoint off, say so in the event log and tell the account's owners."""
    if not endpoint.enabled:
        return
    before = endpoint_representation(endpoint)
    endpoint.enabled, endpoint.disabled_reason = False, reason
    endpoint.save()
    after = endpoint_representation(endpoint)
    record_event(
        type="webhook_endpoint.disabled", account=endpoint.account,
        object_type="webhook_endpoint", obj=after, actor=SYSTEM,
        previous_attributes=changed_attributes(before, after),
    )  # fmt: skip
    owners = list(
        Membership.objects.filter(account_id=endpoint.account_id, role=Role.OWNER).values_list(
            "user__email", flat=True
        )
    )
    message = (
        f"Webhook deliveries to {endpoint.url} are switched off: {reason}\n\n"
        f"Re-enable the endpoint under Settings → Webhooks once it answers again:\n"
        f"{settings.SITE_URL}/settings/webhooks/{endpoint.id}\n"
    )
    transaction.on_commit(
        lambda: send_mail(
            subject="A webhook endpoint was disabled",
            message=message,
            from_email=None,
            recipient_list=owners,
        )
    )


def deliveries_recover_stale(*, now: datetime | None = None) -> int:
    """Queue again pending deliveries whose attempt is overdue by more than a few minutes.

    A worker that died mid-attempt leaves the delivery claimed (``next_attempt_at`` a minute
    ahead) with no task left to run it; so does a task lost from the queue. Returns how many.
    """
    now = now or timezone.now()
    overdue = list(
        WebhookDelivery.objects.filter(
            status=DeliveryStatus.PENDING, next_attempt_at__lt=now - timedelta(minutes=5)
        ).values_list("id", flat=True)
    )
    # A delivery whose task is still waiting in a backed-up queue is left alone.
    waiting = set(
        DBTaskResult.objects.filter(
            status__in=[TaskResultStatus.READY, TaskResultStatus.RUNNING],
            args_kwargs__args__0__in=overdue,
        ).values_list("args_kwargs__args__0", flat=True)
    )
    lost = [delivery_id for delivery_id in overdue if delivery_id not in waiting]
    for delivery_id in lost:
        with transaction.atomic():
            deliver_webhook.enqueue(delivery_id)
    return len(lost)
