"""An endpoint deleted while the worker settles one of its attempts (found by the CI fuzz pass).

The delete used to collect the endpoint's deliveries and attempts, then delete them; an attempt
the worker committed in between was left pointing at a deleted delivery, and PostgreSQL refused
the delete's commit (a 500). Both now lock the endpoint's row first. Runs on PostgreSQL only,
where row locks are real and the two sides run in their own connections.
"""

import threading
import time

import pytest
from django.db import connection, transaction
from django.db.models import deletion
from django.test import override_settings
from django.utils import timezone

from accounts.actors import SYSTEM
from events.services import record_event
from tests.webhooks.receiver import Receiver
from tests.webhooks.test_delivery import add_endpoint, delivery_of, new_event
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.services import endpoint_delete
from webhooks.services.delivery import _settle

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL's row locks"),
]


@override_settings(WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE_TARGETS=True)
def test_an_attempt_settled_while_its_endpoint_is_deleted_neither_fails_nor_lingers(
    account, owner, monkeypatch
):
    with Receiver() as receiver:
        endpoint, _ = add_endpoint(account, receiver)
    delivery = delivery_of(new_event(account, owner), endpoint)

    collected, go_on = threading.Event(), threading.Event()
    real_delete = deletion.Collector.delete

    def delete_after_a_pause(collector):
        # Everything to delete has been collected; hold here while the worker settles.
        collected.set()
        go_on.wait(timeout=10)
        return real_delete(collector)

    monkeypatch.setattr(deletion.Collector, "delete", delete_after_a_pause)
    outcome: dict = {}

    def delete() -> None:
        try:
            endpoint_delete(endpoint=endpoint, actor=SYSTEM)
            outcome["delete"] = "ok"
        except BaseException as failure:
            outcome["delete"] = failure
        finally:
            connection.close()

    def settle() -> None:
        try:
            outcome["settle"] = _settle(delivery.id, timezone.now(), 200, b"ok", "", None, 5)
        except BaseException as failure:
            outcome["settle"] = failure
        finally:
            connection.close()

    deleting = threading.Thread(target=delete)
    deleting.start()
    assert collected.wait(timeout=10)
    settling = threading.Thread(target=settle)
    settling.start()
    time.sleep(0.5)  # unfixed, the worker's attempt commits here, under the delete
    go_on.set()
    deleting.join(timeout=20)
    settling.join(timeout=20)

    assert outcome["delete"] == "ok"
    assert outcome["settle"] is None  # the worker found the endpoint gone
    assert not WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()
    assert not WebhookDelivery.objects.exists()
    assert not WebhookAttempt.objects.exists()


@override_settings(WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE_TARGETS=True)
def test_an_event_recorded_while_its_endpoint_is_deleted_neither_fails_nor_lingers(
    account, owner, monkeypatch
):
    """The other side (found by the fuzz pass too): a change records an event whose delivery
    would go to an endpoint being deleted at that moment."""
    with Receiver() as receiver:
        endpoint, _ = add_endpoint(account, receiver, events=("server.*",))

    collected, go_on = threading.Event(), threading.Event()
    real_delete = deletion.Collector.delete

    def delete_after_a_pause(collector):
        collected.set()
        go_on.wait(timeout=10)
        return real_delete(collector)

    monkeypatch.setattr(deletion.Collector, "delete", delete_after_a_pause)
    outcome: dict = {}

    def delete() -> None:
        try:
            endpoint_delete(endpoint=endpoint, actor=SYSTEM)
            outcome["delete"] = "ok"
        except BaseException as failure:
            outcome["delete"] = failure
        finally:
            connection.close()

    def record() -> None:
        try:
            # A change that does not lock the account (a server's), fanning out to the endpoint.
            with transaction.atomic():
                outcome["event"] = record_event(
                    type="server.created",
                    account=account,
                    object_type="server",
                    obj={"id": "srv_1Qm2Lx9Tc4Rb8Nz1Kd5Wf3Hy", "name": "Alpha"},
                ).type
        except BaseException as failure:
            outcome["event"] = failure
        finally:
            connection.close()

    deleting = threading.Thread(target=delete)
    deleting.start()
    assert collected.wait(timeout=10)
    recording = threading.Thread(target=record)
    recording.start()
    time.sleep(0.5)  # unfixed, the event's delivery row is written here, under the delete
    go_on.set()
    deleting.join(timeout=20)
    recording.join(timeout=20)

    assert outcome == {"delete": "ok", "event": "server.created"}
    assert not WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()
    assert not WebhookDelivery.objects.exists()


@override_settings(WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE_TARGETS=True)
@pytest.mark.parametrize("change", ["update", "rotate_secret", "delete"])
def test_two_endpoints_changed_at_once_do_not_deadlock(account, owner, monkeypatch, change):
    """Found by the CI fuzz pass (a 500 on DELETE /v1/webhooks/{id}, "deadlock detected ...
    while locking tuple in webhooks_webhookendpoint"). A change to endpoint A locked A's row
    and then, recording its event, held every subscribed endpoint against deletion (B); a
    delete of B at that moment held B and, recording its own event, waited for A."""
    from webhooks.services import endpoint_rotate_secret, endpoint_update
    from webhooks.services import endpoints as endpoints_module

    with Receiver() as receiver:
        first, _ = add_endpoint(account, receiver, events=("webhook_endpoint.*",))
        second, _ = add_endpoint(account, receiver, events=("webhook_endpoint.*",))

    changed, go_on = threading.Event(), threading.Event()
    real_record = endpoints_module.endpoint_event_record

    def record_after_a_pause(endpoint, *args, **kwargs):
        if endpoint.pk == first.pk:
            # A's row is locked and changed; hold here while B is deleted.
            changed.set()
            go_on.wait(timeout=10)
        return real_record(endpoint, *args, **kwargs)

    monkeypatch.setattr(endpoints_module, "endpoint_event_record", record_after_a_pause)
    outcome: dict = {}

    def change_first() -> None:
        try:
            if change == "update":
                endpoint_update(endpoint=first, actor=SYSTEM, description="changed")
            elif change == "rotate_secret":
                endpoint_rotate_secret(endpoint=first, actor=SYSTEM)
            else:
                real_hold = endpoints_module.record_event

                def deleted_after_a_pause(**kwargs):
                    changed.set()
                    go_on.wait(timeout=10)
                    return real_hold(**kwargs)

                monkeypatch.setattr(endpoints_module, "record_event", deleted_after_a_pause)
                endpoint_delete(endpoint=first, actor=SYSTEM)
            outcome["first"] = "ok"
        except BaseException as failure:
            outcome["first"] = failure
        finally:
            connection.close()

    def delete_second() -> None:
        try:
            endpoint_delete(endpoint=second, actor=SYSTEM)
            outcome["second"] = "ok"
        except BaseException as failure:
            outcome["second"] = failure
        finally:
            connection.close()

    changing = threading.Thread(target=change_first)
    changing.start()
    assert changed.wait(timeout=10)
    if change == "delete":
        monkeypatch.undo()
    deleting = threading.Thread(target=delete_second)
    deleting.start()
    time.sleep(0.5)  # unfixed, the delete of B waits here for A, then A waits for B
    go_on.set()
    changing.join(timeout=20)
    deleting.join(timeout=20)

    assert outcome == {"first": "ok", "second": "ok"}
    assert not WebhookEndpoint.objects.filter(pk=second.pk).exists()


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _waiting_for_a_lock(pid: int) -> bool:
    """Whether the backend ``pid`` is waiting for a lock (asked from the test's own connection)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return row is not None and row[0] == "Lock"


def _until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# What else locks an endpoint, each in a transaction that pauses, holding it, before its commit.
HOLDERS = ["event", "update", "rotate_secret", "settle", "send_test"]


@override_settings(WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE_TARGETS=True)
@pytest.mark.parametrize("first_to_wait", ["delete", "other"])
def test_a_delete_and_a_transaction_holding_its_endpoint_take_locks_in_one_order(
    account, owner, first_to_wait
):
    """The deadlock behind the CI fuzz pass's 500s on DELETE /v1/webhooks/{id}.

    Django's foreign keys are ``DEFERRABLE INITIALLY DEFERRED`` on PostgreSQL: a transaction
    that records an event takes the ``FOR KEY SHARE`` lock on the event's account row (the
    foreign key's check) at COMMIT, after it has locked the endpoint (the fan-out holding it,
    or a change or the worker's settle that locked it ``FOR NO KEY UPDATE`` first). The delete
    took the account ``FOR UPDATE`` (which conflicts with ``KEY SHARE``) and then the endpoint:
    endpoint → account against account → endpoint. PostgreSQL rolled back whichever waited
    first: the delete ("delete", the CI's 500, which the retry of e983bbc hid), or, the other
    way round ("other"), the other transaction (a server's change, a worker's task), which a
    retry of the delete cannot help. A test delivery was the same race without a deadlock: its
    commit found the endpoint deleted (a foreign-key violation, a 500).

    For each holder, the other transaction holds the endpoint and pauses before its commit; the
    delete starts and waits at once ("delete"), or takes the account and pauses until the other
    waits at its commit ("other"). Both must finish: now every path takes the account first.
    """
    outcomes = {holder: _race(account, owner, holder, first_to_wait) for holder in HOLDERS}

    assert outcomes == {holder: {"other": "ok", "delete": "ok"} for holder in HOLDERS}
    assert not WebhookEndpoint.objects.exists()
    assert not WebhookDelivery.objects.exists()


def _race(account, owner, holder: str, first_to_wait: str) -> dict:
    from webhooks.services import endpoint_rotate_secret, endpoint_send_test, endpoint_update
    from webhooks.services import endpoints as endpoints_module

    with Receiver() as receiver:
        endpoint, _ = add_endpoint(account, receiver, events=("*",))
    delivery = delivery_of(new_event(account, owner), endpoint)

    holding, commit = threading.Event(), threading.Event()
    account_locked, go_on = threading.Event(), threading.Event()
    pids: dict = {}
    outcome: dict = {}

    def other_side() -> None:
        try:
            pids["other"] = _backend_pid()
            with transaction.atomic():
                if holder == "event":
                    # A change elsewhere in the account (a server's), fanned out to the endpoint.
                    record_event(
                        type="server.created",
                        account=account,
                        object_type="server",
                        obj={"id": "srv_1Qm2Lx9Tc4Rb8Nz1Kd5Wf3Hy", "name": "Alpha"},
                    )
                elif holder == "update":
                    endpoint_update(endpoint=endpoint, actor=SYSTEM, description="changed")
                elif holder == "rotate_secret":
                    endpoint_rotate_secret(endpoint=endpoint, actor=SYSTEM)
                elif holder == "settle":
                    # The worker settles an attempt answered 410 Gone: it disables the endpoint
                    # and records webhook_endpoint.disabled.
                    _settle(delivery.id, timezone.now(), 410, b"gone", "", None, 5)
                else:
                    endpoint_send_test(endpoint=endpoint, actor=SYSTEM)
                holding.set()
                commit.wait(timeout=10)
            outcome["other"] = "ok"
        except BaseException as failure:
            outcome["other"] = failure
        finally:
            connection.close()

    def delete() -> None:
        try:
            pids["delete"] = _backend_pid()
            endpoint_delete(endpoint=endpoint, actor=SYSTEM)
            outcome["delete"] = "ok"
        except BaseException as failure:
            outcome["delete"] = failure
        finally:
            connection.close()

    real_account_lock = endpoints_module.account_lock

    def account_lock_then_pause(*args, **kwargs):
        locked = real_account_lock(*args, **kwargs)
        account_locked.set()
        go_on.wait(timeout=10)
        return locked

    if first_to_wait == "delete":
        go_on.set()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(endpoints_module, "account_lock", account_lock_then_pause)
        threads = [threading.Thread(target=other_side), threading.Thread(target=delete)]
        threads[0].start()
        assert holding.wait(timeout=10)
        threads[1].start()
        # The delete holds the account and pauses ("other"), or waits for a lock.
        _until(
            lambda: (
                "delete" in pids
                and (account_locked.is_set() or _waiting_for_a_lock(pids["delete"]))
            )
        )
        commit.set()
        # The other transaction commits, or (unfixed) waits for the account at its commit.
        _until(lambda: "other" in outcome or _waiting_for_a_lock(pids["other"]))
        go_on.set()
        for thread in threads:
            thread.join(timeout=20)
    return outcome
