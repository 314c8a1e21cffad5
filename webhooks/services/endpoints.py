"""Webhook endpoints: creating, changing, deleting, rotating secrets, sending a test."""

import base64
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.actors import Actor
from accounts.models import Account
from accounts.services import account_lock
from events.catalogue import is_event_pattern, pattern_matches
from events.services import changed_attributes, record_event
from hosting.errors import NotFound, QuotaExceeded, ValidationFailed
from hosting.secrets_box import encrypt_secret
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.representations import webhook_endpoint_representation
from webhooks.services.delivery import delivery_create, hold_accounts, hold_endpoints
from webhooks.services.targets import UnsafeTarget, resolve_target

SECRET_OVERLAP = timedelta(hours=24)


def clean_patterns(patterns: Any) -> list[str]:
    """Event types and patterns from the catalogue, sorted, without repeats, and without what a
    wildcard among them already covers (``["*", "bot.crashed"]`` is ``["*"]``): what is sent
    is the same, and the endpoint says what it receives in its shortest form."""
    if not isinstance(patterns, list) or not patterns:
        raise ValidationFailed.field(
            "enabled_events", "required", _('List the event types to send, or ["*"] for all.')
        )
    for index, pattern in enumerate(patterns):
        if not is_event_pattern(pattern):
            raise ValidationFailed.field(
                f"enabled_events.{index}",
                "invalid_choice",
                _("Unknown event type %(pattern)s.") % {"pattern": repr(pattern)},
            )
    wildcards = [pattern for pattern in patterns if pattern.endswith("*")]
    return sorted(
        {
            pattern
            for pattern in patterns
            if not any(w != pattern and pattern_matches(w, pattern) for w in wildcards)
        }
    )


def validate_url(url: Any) -> str:
    """A URL webhooks may be sent to now, or a field error saying why not."""
    if not isinstance(url, str) or len(url) > 2000:
        raise ValidationFailed.field("url", "invalid", _("url must be an https:// URL."))
    try:
        resolve_target(url)
    except UnsafeTarget as refused:
        raise ValidationFailed.field("url", "unsafe_target", str(refused)) from None
    return url


def _new_secret() -> str:
    """``whsec_`` and 24 random bytes in base64, as Standard Webhooks secrets are written."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def endpoint_event_record(
    endpoint: WebhookEndpoint,
    event_type: str,
    actor: Actor,
    previous: dict[str, Any] | None = None,
) -> None:
    """Record ``event_type`` with the endpoint as it is now."""
    record_event(
        type=event_type,
        account=endpoint.account,
        object_type="webhook_endpoint",
        obj=webhook_endpoint_representation(endpoint),
        actor=actor,
        previous_attributes=previous,
    )


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
    url = validate_url(url)
    patterns = clean_patterns(enabled_events)
    account_lock(account.pk)
    if account.webhook_endpoints.count() >= settings.WEBHOOKS_MAX_ENDPOINTS:
        raise QuotaExceeded(
            _("An account may have %(limit)s webhook endpoints.")
            % {"limit": settings.WEBHOOKS_MAX_ENDPOINTS},
            details={"limit": settings.WEBHOOKS_MAX_ENDPOINTS, "quota": "webhook_endpoints"},
        )
    secret = _new_secret()
    endpoint = WebhookEndpoint.objects.create(
        account=account,
        url=url,
        enabled_events=patterns,
        description=description.strip()[:500],
        enabled=enabled,
        secret_encrypted=encrypt_secret(secret),
        created_by=actor.user,
    )
    endpoint_event_record(endpoint, "webhook_endpoint.created", actor)
    return endpoint, secret


def _locked_for_change(endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """The endpoint re-read under a lock for a change that keeps its row (not a delete).

    Its account's row first (``FOR KEY SHARE``, ``delivery.hold_accounts``): the change records
    an event, whose commit locks the account that way anyway; taken after the endpoint, it
    deadlocked with a delete of this endpoint, which holds the account and waits for the
    endpoint (the module ``delivery``'s lock order). Then ``FOR NO KEY UPDATE`` on the
    endpoint: recording the event holds the account's subscribed endpoints ``FOR KEY SHARE``
    (``delivery.hold_endpoints``), which does not wait for this lock; with ``FOR UPDATE`` here
    a change of A and a delete of B each waited for the other's row.
    """
    hold_accounts([endpoint.account_id])
    return WebhookEndpoint.objects.select_for_update(no_key=True).get(pk=endpoint.pk)


@transaction.atomic
def endpoint_update(*, endpoint: WebhookEndpoint, actor: Actor, **changes: Any) -> WebhookEndpoint:
    """Change ``url``, ``description``, ``enabled_events`` or ``enabled`` (re-enabling clears
    the failure streak).

    Whoever points the endpoint at a new URL is the one it acts as from then on: otherwise a
    member could send to their own server everything a more privileged creator may see.
    """
    endpoint = _locked_for_change(endpoint)
    before = webhook_endpoint_representation(endpoint)
    if "url" in changes:
        url = validate_url(changes["url"])
        if url != endpoint.url:
            endpoint.url, endpoint.created_by = url, actor.user
    if "description" in changes:
        endpoint.description = str(changes["description"]).strip()[:500]
    if "enabled_events" in changes:
        endpoint.enabled_events = clean_patterns(changes["enabled_events"])
    if "enabled" in changes:
        enabled = bool(changes["enabled"])
        if enabled and not endpoint.enabled:
            endpoint.disabled_reason, endpoint.failing_since, endpoint.failure_streak = "", None, 0
        endpoint.enabled = enabled
    endpoint.save()
    after = webhook_endpoint_representation(endpoint)
    previous = changed_attributes(before, after)
    previous.pop("updated_at", None)
    if previous:
        endpoint_event_record(endpoint, "webhook_endpoint.updated", actor, previous)
    return endpoint


@transaction.atomic
def endpoint_delete(*, endpoint: WebhookEndpoint, actor: Actor) -> None:
    """Delete an endpoint with its deliveries; the event keeps what it was.

    Locks in the module ``delivery``'s order: the account's row (``account_lock``, ``FOR
    UPDATE``: two deletes of the account's endpoints, each holding its own endpoint while its
    event is fanned out to the other, would otherwise wait for each other), then the endpoint,
    then (deleting them) its deliveries and attempts. Everything else that locks the endpoint
    takes the account first too (``FOR KEY SHARE``), so it either finishes before the delete
    starts or waits for it and finds the endpoint gone; a worker settling an attempt waits and
    then finds it gone, rather than adding an attempt the delete would leave behind.
    """
    account_lock(endpoint.account_id)
    locked = WebhookEndpoint.objects.select_for_update().filter(pk=endpoint.pk).first()
    if locked is None:
        raise NotFound()
    representation = webhook_endpoint_representation(locked)
    account = locked.account
    locked.delete()
    record_event(
        type="webhook_endpoint.deleted",
        account=account,
        object_type="webhook_endpoint",
        obj=representation,
        actor=actor,
    )


@transaction.atomic
def endpoint_rotate_secret(
    *, endpoint: WebhookEndpoint, actor: Actor
) -> tuple[WebhookEndpoint, str]:
    """A new secret; the old one keeps signing beside it for 24 hours (two signatures)."""
    endpoint = _locked_for_change(endpoint)
    secret = _new_secret()
    endpoint.previous_secret_encrypted = endpoint.secret_encrypted
    endpoint.previous_secret_expires_at = timezone.now() + SECRET_OVERLAP
    endpoint.secret_encrypted = encrypt_secret(secret)
    endpoint.save()
    endpoint_event_record(endpoint, "webhook_endpoint.updated", actor, {"secret_rotated_at": None})
    return endpoint, secret


@transaction.atomic
def endpoint_send_test(*, endpoint: WebhookEndpoint, actor: Actor) -> WebhookDelivery:
    """A ``webhook.test`` event delivered to this endpoint only, whatever it subscribes to.

    The endpoint is held first (its account, then it, ``delivery.hold_endpoints``): a delete
    at the same moment either waits for this or goes first, and then this is a 404 rather
    than a delivery to a deleted endpoint that failed the commit (a 500).
    """
    if not hold_endpoints([endpoint]):
        raise NotFound()
    event = record_event(
        type="webhook.test",
        account=endpoint.account,
        object_type="webhook_endpoint",
        obj=webhook_endpoint_representation(endpoint),
        actor=actor,
    )
    return delivery_create(endpoint, event)
