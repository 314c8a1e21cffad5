"""The ``housekeeping`` command: event retention, expiring-key notices, and the other upkeep."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from accounts.models import ApiKey
from accounts.roles import SCOPES
from accounts.services import api_key_create, api_keys_expiring_notify
from events.models import Event
from events.services import events_prune, record_event
from idempotency.models import IdempotencyRecord
from tests.factories import WebhookEndpointFactory
from webhooks.models import WebhookAttempt, WebhookDelivery

pytestmark = pytest.mark.django_db


def key(account, owner, name="Key", expires_in=None) -> ApiKey:
    expires_at = timezone.now() + expires_in if expires_in is not None else None
    api_key, _ = api_key_create(
        account=account, user=owner, name=name, scopes=list(SCOPES), expires_at=expires_at
    )
    return api_key


def housekeeping(*args) -> str:
    out = StringIO()
    call_command("housekeeping", *args, stdout=out)
    return out.getvalue()


@override_settings(
    WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE_TARGETS=True, EVENT_RETENTION_DAYS=30
)
def test_events_older_than_the_retention_are_pruned_with_their_deliveries(account):
    endpoint = WebhookEndpointFactory(account=account, url="http://127.0.0.1:9/hook")
    old, recent = (
        record_event(
            type="account.updated", account=account, object_type="account", obj={"id": account.id}
        )
        for _ in range(2)
    )
    Event.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=31))
    Event.objects.filter(pk=recent.pk).update(created_at=timezone.now() - timedelta(days=29))
    old_delivery = WebhookDelivery.objects.get(event=old)
    WebhookAttempt.objects.create(delivery=old_delivery, status_code=500)

    output = housekeeping()

    assert "events pruned 1" in output
    assert not Event.objects.filter(pk=old.pk).exists()
    assert Event.objects.filter(pk=recent.pk).exists()
    assert not WebhookDelivery.objects.filter(pk=old_delivery.pk).exists()
    assert not WebhookAttempt.objects.exists()
    assert WebhookDelivery.objects.filter(event=recent, endpoint=endpoint).exists()
    assert events_prune(older_than_days=30) == 0


def test_events_prune_works_in_batches(account):
    for _ in range(5):
        record_event(type="account.updated", account=account, object_type="account", obj={})
    Event.objects.update(created_at=timezone.now() - timedelta(days=3))
    assert events_prune(older_than_days=2, batch=2) == 5
    assert not Event.objects.exists()


def test_api_key_expiring_is_recorded_once_per_key(account, owner):
    soon = key(account, owner, "soon", timedelta(days=3))
    later = key(account, owner, "later", timedelta(days=10))
    key(account, owner, "never")
    revoked = key(account, owner, "revoked", timedelta(days=2))
    ApiKey.objects.filter(pk=revoked.pk).update(revoked_at=timezone.now())
    expired = key(account, owner, "expired", timedelta(days=1))
    ApiKey.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(hours=1))

    assert api_keys_expiring_notify() == 1
    assert api_keys_expiring_notify() == 0
    assert "expiring keys notified 0" in housekeeping()

    [event] = Event.objects.filter(type="api_key.expiring")
    assert event.object_id == soon.id and event.account_id == account.id
    assert event.data["object"]["name"] == "soon"
    assert event.actor_user is None and event.actor_api_key is None

    # The notice is remembered on the key: pruning the event log does not repeat it.
    Event.objects.filter(type="api_key.expiring").delete()
    assert api_keys_expiring_notify() == 0
    soon.refresh_from_db()
    assert soon.expiry_notified_at is not None

    # Three days on, the other key comes within 7 days of its end: told once too.
    in_three_days = timezone.now() + timedelta(days=3, hours=1)
    assert api_keys_expiring_notify(now=in_three_days) == 1
    assert api_keys_expiring_notify(now=in_three_days) == 0
    assert sorted(
        Event.objects.filter(type="api_key.expiring").values_list("object_id", flat=True)
    ) == [later.id]  # the first notice was pruned above


def test_the_command_runs_once_without_every(account, owner):
    IdempotencyRecord.objects.create(
        api_key_id="abcdefghijkl",
        key="k",
        request_method="POST",
        request_path="/v1/servers",
        request_body_sha256="0" * 64,
        created_at=timezone.now() - timedelta(days=2),
    )
    key(account, owner, "soon", timedelta(days=1))

    output = housekeeping()

    assert output.count("\n") == 1
    for part in (
        "actions failed 0",
        "actions requeued 0",
        "deleted instances' databases dropped 0",
        "deliveries requeued 0",
        "events pruned 0",
        "expiring keys notified 1",
        "idempotency records pruned 1",
    ):
        assert part in output
    assert not IdempotencyRecord.objects.exists()


def test_housekeeping_runs_the_upkeep_of_every_app_in_installed_order(db):
    from hosting.housekeeping import upkeep_steps

    assert [label for label, _ in upkeep_steps()] == [
        "hosting",
        "accounts",
        "events",
        "servers",
        "databases",
        "webhooks",
        "idempotency",
        "billing",
        "stripe_gateway",
        "support",
        "analytics",
    ]
    output = housekeeping()
    for name in (
        "expiring keys notified 0",
        "events pruned 0",
        "actions failed 0",
        "server count rows folded",
        "deliveries requeued 0",
        "idempotency records pruned 0",
        "rate-limit counters pruned",
        "ticket SLA breaches flagged 0",
        "resolved tickets closed 0",
        "orphaned attachment files removed 0",
        "MRR snapshots taken",
        "uptime days recorded",
    ):
        assert name in output


def test_the_project_package_imports_no_app_for_housekeeping():
    import ast
    from pathlib import Path

    import hosting

    root = Path(hosting.__file__).parent
    apps = {"accounts", "events", "servers", "webhooks", "idempotency"}
    for module in (root / "housekeeping.py", root / "management" / "commands" / "housekeeping.py"):
        tree = ast.parse(module.read_text())
        imported = {
            (node.module or "").split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
        } | {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        assert not imported & apps, module
