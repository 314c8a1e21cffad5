"""Fan-out and delivery: which endpoints an event goes to, and each attempt to send it.

The outbox: ``deliveries_for_event`` runs in the transaction that recorded the event (it is an
event consumer, see webhooks/apps.py), so each delivery row and its queued task commit with the
change that caused them and nothing is lost when the worker or the receiver is down. The
worker's ``webhook_deliver`` makes one attempt, records it, and either finishes the delivery or
schedules the next attempt.

**Lock order** (PostgreSQL; SQLite runs one writer at a time): the account's row, then its
endpoints, then their deliveries, in every transaction that locks more than one of them. The
account comes first because every transaction that records an event locks it anyway: the
event's foreign key is checked with ``FOR KEY SHARE`` on the account's row, and Django makes
foreign keys ``DEFERRABLE INITIALLY DEFERRED``, so by default that lock is taken at COMMIT,
after everything else. ``endpoint_delete`` holds the account ``FOR UPDATE`` (``account_lock``,
which conflicts with ``KEY SHARE``) and then the endpoint; a transaction that had locked the
endpoint first and took the account only at its commit deadlocked with it (the CI fuzz pass's
500s on ``DELETE /v1/webhooks/{id}``). So ``hold_accounts`` takes that ``KEY SHARE`` lock
early, before any endpoint: in ``hold_endpoints`` (the fan-out), in a change of an endpoint and
in the worker's ``_settle``. It is the lock the commit would take anyway, only sooner.
"""

import functools
import random
import ssl
import time
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.mail import send_mail
from django.db import connection, transaction
from django.db.models import OuterRef, Subquery
from django.tasks import TaskResultStatus, task
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from django_tasks_db.models import DBTaskResult

from accounts.actors import SYSTEM
from accounts.models import Account, Membership
from accounts.roles import Role, expand_implied, scopes_allowed_for
from events.catalogue import pattern_matches
from events.models import Event
from events.services import changed_attributes, record_event
from events.visibility import can_see
from hosting.errors import Conflict
from hosting.i18n import in_language_of, language_of
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.representations import webhook_endpoint_representation
from webhooks.services.signing import payload_of, signature_header
from webhooks.services.targets import UnsafeTarget, resolve_target

# Seconds before attempt 2, 3, … (CONTRACT §9 / the webhooks issue); ±10% jitter.
RETRY_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]
DISABLE_AFTER = timedelta(days=5)
CONNECT_TIMEOUT, TOTAL_TIMEOUT = 5.0, 15.0
MAX_RESPONSE_BYTES = 64 * 1024
EXCERPT_BYTES = 1024
USER_AGENT = "HostingManagement-Webhooks/1.0"


@task
def deliver_webhook(delivery_id: str) -> None:
    """The worker's entry point for one attempt of one delivery."""
    webhook_deliver(delivery_id=delivery_id)


def delivery_create(endpoint: WebhookEndpoint, event: Event) -> WebhookDelivery:
    """A delivery of ``event`` to ``endpoint``, queued in the caller's transaction."""
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint, event=event, next_attempt_at=timezone.now()
    )
    deliver_webhook.enqueue(delivery.id)
    return delivery


# An endpoint whose creator is unknown, deactivated or no longer a member sees what a viewer sees.
UNKNOWN_CREATOR_ROLE = Role.VIEWER


def _creator_may_see(endpoint: WebhookEndpoint, event: Event) -> bool:
    # creator_role: annotated by the endpoints selector the fan-out reads.
    role = endpoint.creator_role or UNKNOWN_CREATOR_ROLE  # type: ignore[attr-defined]
    scopes = expand_implied(scopes_allowed_for(role, is_staff=False))
    return can_see(event, role=role, user_id=endpoint.created_by_id, scopes=scopes)


def deliveries_for_event(event: Event) -> list[WebhookDelivery]:
    """Queue the event for every enabled endpoint of its account that subscribes to its type
    and whose creator may see it with their current role (``events.visibility``)."""
    return deliveries_for_events([event])


def deliveries_for_events(events: list[Event]) -> list[WebhookDelivery]:
    """``deliveries_for_event`` for many events at once (``events.services.record_events``).

    One query reads the endpoints of all their accounts with their creators' roles, however
    many events and endpoints there are.
    """
    accounts = {
        event.account_id
        for event in events
        if event.account_id is not None and event.type != "webhook.test"
    }
    if not accounts:
        return []
    creator_role = Membership.objects.filter(
        account_id=OuterRef("account_id"), user_id=OuterRef("created_by_id"), user__is_active=True
    ).values("role")[:1]
    endpoints: dict[str, list[WebhookEndpoint]] = {}
    for endpoint in WebhookEndpoint.objects.filter(account_id__in=accounts, enabled=True).annotate(
        creator_role=Subquery(creator_role)
    ):
        endpoints.setdefault(endpoint.account_id, []).append(endpoint)
    chosen = [
        (endpoint, event)
        for event in events
        if event.account_id in accounts
        for endpoint in endpoints.get(event.account_id, [])
        if any(pattern_matches(pattern, event.type) for pattern in endpoint.enabled_events)
        and _creator_may_see(endpoint, event)
    ]
    still_there = hold_endpoints(list({endpoint.pk: endpoint for endpoint, _ in chosen}.values()))
    return [
        delivery_create(endpoint, event) for endpoint, event in chosen if endpoint.pk in still_there
    ]


def hold_accounts(account_ids: list[str]) -> None:
    """Lock the accounts' rows ``FOR KEY SHARE`` (in id order) for the rest of the transaction:
    the first lock of a webhooks transaction that locks an endpoint and may record an event
    (the module's lock order).

    ``KEY SHARE`` is the lock the deferred foreign-key check of an event (or a delivery) takes
    on its account at commit; taken now, before the endpoints, it waits for an
    ``account_lock`` holder (an endpoint's delete or creation) instead of holding an endpoint
    that holder is about to wait for. It does not wait for other ``KEY SHARE`` holders, nor for
    ``FOR NO KEY UPDATE`` (a change of the account's own columns).
    """
    ids = sorted(set(account_ids))
    if not ids or connection.vendor != "postgresql":
        return
    table = connection.ops.quote_name(Account._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id FROM {table} WHERE id = ANY(%s) ORDER BY id FOR KEY SHARE",  # noqa: S608
            [ids],
        )


def hold_endpoints(endpoints: list[WebhookEndpoint]) -> set[str]:
    """Hold the endpoints against deletion until this transaction commits, and return the ids
    of those that still exist.

    On PostgreSQL this is ``FOR KEY SHARE``, their accounts' rows first (``hold_accounts``,
    the module's lock order): it does not block other changes recording events, or the
    worker's bookkeeping (``FOR NO KEY UPDATE``). It does make ``endpoint_delete`` (which takes
    the account and then the endpoint ``FOR UPDATE``) wait for this transaction, and if a
    delete came first, this waits for the delete and then finds the endpoint gone. Without it,
    a delivery added under a delete that had already collected its rows failed the commit.
    SQLite runs one writer at a time.
    """
    ids = [endpoint.pk for endpoint in endpoints]
    if not ids or connection.vendor != "postgresql":
        return set(ids)
    hold_accounts([endpoint.account_id for endpoint in endpoints])
    table = connection.ops.quote_name(WebhookEndpoint._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {table} WHERE id = ANY(%s) FOR KEY SHARE", [ids])  # noqa: S608
        return {row[0] for row in cursor.fetchall()}


@transaction.atomic
def delivery_retry(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a delivery again now (a person pressed retry): same event, same ``webhook-id``."""
    delivery = WebhookDelivery.objects.select_for_update().get(pk=delivery.pk)
    if delivery.status == DeliveryStatus.PENDING and delivery.attempt_count == 0:
        raise Conflict(_("This delivery has not been attempted yet."))
    delivery.status = DeliveryStatus.PENDING
    delivery.next_attempt_at = timezone.now()
    delivery.save(update_fields=["status", "next_attempt_at"])
    deliver_webhook.enqueue(delivery.id)
    return delivery


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
            "POST",
            pinned,
            content=body.encode(),
            headers=request_headers,
            extensions={"sni_hostname": host},
        )
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
        # Only the delivery row is locked here: the account's and endpoint's rows are always
        # locked before its deliveries (``_settle``, ``endpoint_delete``), never after, so no
        # two can deadlock.
        delivery = (
            WebhookDelivery.objects.select_for_update(of=("self",))
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
def _settle(
    delivery_id: str,
    now: datetime,
    status_code: int | None,
    excerpt: bytes,
    error: str,
    retry_after: float | None,
    duration_ms: int,
) -> WebhookDelivery | None:
    # The account, the endpoint, then the delivery: the order ``endpoint_delete`` takes too
    # (the module's lock order), so an attempt is never written under a delete that has already
    # collected what it removes, and disabling the endpoint (an event, whose commit locks the
    # account) never waits for the account while holding the endpoint a delete waits for.
    row = (
        WebhookDelivery.objects.filter(pk=delivery_id)
        .values_list("endpoint_id", "endpoint__account_id")
        .first()
    )
    if row is None:
        return None  # the endpoint (or the event) was deleted during the attempt
    endpoint_id, account_id = row
    hold_accounts([account_id])
    # FOR NO KEY UPDATE: it still waits for a delete, but not for changes that are recording
    # events for this endpoint (they hold it FOR KEY SHARE, see ``hold_endpoints``).
    endpoint = WebhookEndpoint.objects.select_for_update(no_key=True).filter(pk=endpoint_id).first()
    delivery = WebhookDelivery.objects.select_for_update().filter(pk=delivery_id).first()
    if endpoint is None or delivery is None:
        return None  # the endpoint (or the event) was deleted during the attempt
    ok = status_code is not None and 200 <= status_code < 300
    attempt = WebhookAttempt(
        delivery=delivery,
        created_at=now,
        status_code=status_code,
        duration_ms=duration_ms,
        response_excerpt=excerpt.decode("utf-8", "replace"),
        error=error[:500],
    )
    delivery.last_status_code = status_code
    endpoint.last_delivery_at, endpoint.last_delivery_status = now, status_code
    if ok:
        delivery.status, delivery.delivered_at, delivery.next_attempt_at = "succeeded", now, None
        endpoint.failing_since, endpoint.failure_streak = None, 0
    else:
        endpoint.failure_streak += 1
        endpoint.failing_since = endpoint.failing_since or now
        if status_code == 410:
            _disable(endpoint, gettext_noop("The endpoint answered 410 Gone."))
        elif now - endpoint.failing_since >= DISABLE_AFTER:
            _disable(endpoint, gettext_noop("Every delivery failed for 5 days."))
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
    before = webhook_endpoint_representation(endpoint)
    endpoint.enabled, endpoint.disabled_reason = False, reason
    endpoint.save()
    after = webhook_endpoint_representation(endpoint)
    record_event(
        type="webhook_endpoint.disabled",
        account=endpoint.account,
        object_type="webhook_endpoint",
        obj=after,
        actor=SYSTEM,
        previous_attributes=changed_attributes(before, after),
    )
    owners = [
        membership.user
        for membership in Membership.objects.filter(
            account_id=endpoint.account_id, role=Role.OWNER
        ).select_related("user")
    ]
    # Each owner reads it in their own language (``reason`` is stored in English, marked with
    # gettext_noop, and translated here and on the endpoint's page); one mail per language.
    by_language: dict[str, list] = {}
    for owner in owners:
        by_language.setdefault(language_of(owner) or settings.LANGUAGE_CODE, []).append(owner)
    mails = []
    for readers in by_language.values():
        with in_language_of(readers[0]):
            message = _(
                "Webhook deliveries to %(url)s are switched off: %(reason)s\n\n"
                "Re-enable the endpoint under Settings → Webhooks once it answers again:\n"
                "%(page)s\n"
            ) % {
                "url": endpoint.url,
                "reason": _(reason),
                "page": f"{settings.SITE_URL}/settings/webhooks/{endpoint.id}",
            }
            subject = _("A webhook endpoint was disabled")
        mails.append((subject, message, [reader.email for reader in readers]))
    transaction.on_commit(
        lambda: [
            send_mail(subject=subject, message=message, from_email=None, recipient_list=to)
            for subject, message, to in mails
        ]
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
