"""Who sees which events (``events/visibility.py``): over ``GET /v1/events`` and in webhooks.

Each role records one event of every type and reads the log with a key holding every scope its
role allows; each role's webhook endpoint, subscribed to ``*``, receives the same selection.
The expected sets below are written from the roles table, not from the visibility table.
"""

import importlib

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.actors import SYSTEM, Actor
from accounts.api.serializers import ApiKeySerializer
from accounts.roles import Role, expand_implied, grantable_scopes, scopes_allowed_for
from accounts.services import api_key_create, member_change_role, member_remove
from events.catalogue import ALL_EVENT_TYPES, EVENT_TYPES
from events.models import Event
from events.services import record_event
from events.visibility import EVENT_VISIBILITY, UNKNOWN, can_see, rule_for, visible_events_q
from tests.factories import MembershipFactory
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import (
    deliveries_for_event,
    endpoint_create,
    endpoint_update,
)

pytestmark = pytest.mark.django_db
URL = "https://93.184.215.14/hook"
SERVER_ID, BOT_ID = "srv_4Xb9Qe2LmT0sWc8RkP1nZa7Y", "bot_7Hc2Lm9QxT4nW8pR1sK3vZbY"

# What each role may see, by the kind of object an event shows.
SERVERS = {*EVENT_TYPES["Servers"], "action.succeeded@srv", "action.failed@srv"}
BOTS = {*EVENT_TYPES["Bots"], "action.succeeded@bot", "action.failed@bot"}
OWN_KEYS = {f"{event_type}@own" for event_type in EVENT_TYPES["API keys"]}
OTHERS_KEYS = {f"{event_type}@other" for event_type in EVENT_TYPES["API keys"]}
FACTORS = {"user.factor_added", "user.factor_removed", "user.factor_reset", "user.factor_failed"}
FACTORS |= {"user.signed_in", "user.sso_linked", "user.sso_unlinked"}
TEAM_AND_ACCOUNT = {*EVENT_TYPES["Team"], *EVENT_TYPES["Account"]} - {"user.login_failed"} - FACTORS
# Failed sign-ins, members' SFTP credentials and second factors: the Activity page's readers.
LOGIN_FAILED = {"user.login_failed", *EVENT_TYPES["SSH keys and SFTP"], *FACTORS}
WEBHOOKS = set(EVENT_TYPES["Webhooks"])
BILLING = set(EVENT_TYPES["Billing"])
SUPPORT = set(EVENT_TYPES["Support"])
# Backups: who may read them (backups:read: not Billing, not Viewers).
BACKUPS = set(EVENT_TYPES["Backups"])
# Schedules: schedules:read (every role but Billing).
SCHEDULES = set(EVENT_TYPES["Schedules"])
# Databases: databases:read (not Billing, not Viewers: connection details are half a credential).
DATABASES = set(EVENT_TYPES["Databases"])
# A type without a rule, and an action that names neither a server nor a bot.
UNKNOWN_KINDS = {"nothing.happened", "action.failed@none"}
EVERYTHING = (
    SERVERS
    | BOTS
    | OWN_KEYS
    | OTHERS_KEYS
    | TEAM_AND_ACCOUNT
    | LOGIN_FAILED
    | WEBHOOKS
    | BILLING
    | SUPPORT
    | BACKUPS
    | SCHEDULES
    | DATABASES
) | UNKNOWN_KINDS
EXPECTED = {
    Role.OWNER: EVERYTHING,
    Role.ADMIN: EVERYTHING,
    Role.DEVELOPER: SERVERS
    | BOTS
    | OWN_KEYS
    | TEAM_AND_ACCOUNT
    | WEBHOOKS
    | SUPPORT
    | BACKUPS
    | SCHEDULES
    | DATABASES,
    Role.BILLING: OWN_KEYS | TEAM_AND_ACCOUNT | BILLING | SUPPORT,
    Role.SUPPORT: SERVERS
    | BOTS
    | OWN_KEYS
    | TEAM_AND_ACCOUNT
    | SUPPORT
    | BACKUPS
    | SCHEDULES
    | DATABASES,
    Role.VIEWER: SERVERS | BOTS | TEAM_AND_ACCOUNT | WEBHOOKS | BILLING | SUPPORT | SCHEDULES,
    # Someone invited for one server: no account-wide scope but their own keys; what happens on
    # their servers they read there (the grant's activity.read), never in the account's log.
    Role.GUEST: OWN_KEYS,
}
# Roles without webhooks:read cannot open the log at all.
API_REFUSED = {Role.BILLING, Role.SUPPORT, Role.GUEST}


def record_every_type(account, *, me, other, my_key, others_key) -> dict[str, Event]:
    """One event of every type (two where the object decides: whose key, which instance)."""
    member = {"user": other.id, "email": other.email, "role": "developer"}
    objects = {
        "server": {
            "id": SERVER_ID,
            "name": "Alpha SMP",
            "game": "minecraft-java",
            "status": "running",
        },
        "bot": {"id": BOT_ID, "name": "Helper", "runtime": "python-3.13", "status": "running"},
        "member": member,
        "account": {"id": account.id, "name": account.name},
        "user": {"id": other.id, "email": other.email, "name": other.name},
        "webhook_endpoint": {"id": "whe_5Rk8Tz2Qm7Lx4Wc9Nb1Hd6Fy", "url": URL},
        "webhook": {"id": "whe_5Rk8Tz2Qm7Lx4Wc9Nb1Hd6Fy", "url": URL},
        "invoice": {"id": "inv_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5R", "number": "INV-2026-000001"},
        "payment": {"id": "pay_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8", "amount": 1200, "currency": "EUR"},
        "customer": {"id": "btx_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk", "amount": 500, "currency": "EUR"},
        "credit_note": {"id": "cn_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8", "number": "CN-2026-000001"},
        "subscription": {"id": "sub_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8", "status": "active"},
        "payment_method": {"id": "pm_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8", "type": "card"},
        "ticket": {"id": "tkt_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8", "number": 1042, "status": "open"},
        "ssh_key": {"id": "sshk_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5R", "fingerprint": "SHA256:abc"},
        "backup": {"id": "bkp_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8", "name": "Nightly", "status": "completed"},
        "schedule": {"id": "sch_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8", "name": "Nightly", "active": True},
        "database": {"id": "db_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8", "name": "main", "engine": "mariadb"},
    }
    recorded = {}

    def record(label, event_type, obj, related_id="", actor=SYSTEM):
        recorded[label] = record_event(
            type=event_type,
            account=account,
            object_type=event_type.split(".")[0],
            obj=obj,
            related_id=related_id,
            actor=actor,
        )

    for event_type in sorted(ALL_EVENT_TYPES):
        area = event_type.split(".")[0]
        if area == "action":
            action = {"id": "act_1Qm2Lx9Tc4Rb8Nz1Kd5Wf3Hy", "type": "start", "status": "failed"}
            record(f"{event_type}@srv", event_type, action, SERVER_ID)
            record(f"{event_type}@bot", event_type, action, BOT_ID)
        elif area == "api_key":
            record(f"{event_type}@own", event_type, ApiKeySerializer(my_key).data)
            record(f"{event_type}@other", event_type, ApiKeySerializer(others_key).data)
        elif event_type == "user.login_failed":
            subject = {"id": other.id, "email": other.email}
            record(event_type, event_type, subject, actor=Actor(ip="198.51.100.23"))
        else:
            record(event_type, event_type, objects[area], actor=Actor(user=me))
    record("nothing.happened", "nothing.happened", {"id": "xyz_1"})
    record("action.failed@none", "action.failed", {"id": "act_2Qm2Lx9Tc4Rb8Nz1Kd5Wf3Hy"})
    return recorded


@pytest.fixture
def someone_else(account):
    """Another member of the account, with a key of their own."""
    return MembershipFactory(account=account, role=Role.DEVELOPER).user


def key_of(user, account, role):
    api_key, token = api_key_create(
        account=account, user=user, name="All it may", scopes=grantable_scopes(role, is_staff=False)
    )
    return api_key, token


# --- The table -----------------------------------------------------------------------------


def test_every_event_type_has_its_own_rule():
    for event_type in ALL_EVENT_TYPES:
        related = [SERVER_ID, BOT_ID] if event_type.startswith("action.") else [""]
        for related_id in related:
            assert rule_for(event_type, related_id) is not UNKNOWN, event_type


def test_rules_never_overlap():
    for event_type in [*ALL_EVENT_TYPES, "nothing.happened"]:
        for related_id in ("", SERVER_ID, BOT_ID):
            matching = [r for r in EVENT_VISIBILITY if r.matches(event_type, related_id)]
            assert len(matching) <= 1, (event_type, related_id, matching)


def test_a_type_without_a_rule_is_for_owners_and_admins_only():
    assert rule_for("nothing.happened") is UNKNOWN
    assert rule_for("action.failed", "") is UNKNOWN
    for role in Role:
        scopes = expand_implied(scopes_allowed_for(role, is_staff=False))
        event = Event(type="nothing.happened", data={})
        expected = role in {Role.OWNER, Role.ADMIN}
        assert can_see(event, role=role, user_id="usr_x", scopes=scopes) is expected, role


@pytest.mark.parametrize("role", list(Role))
def test_the_filter_and_the_per_event_check_agree(role, account, someone_else):
    me = MembershipFactory(account=account, role=role).user
    my_key, _ = key_of(me, account, role)
    others_key, _ = key_of(someone_else, account, Role.DEVELOPER)
    recorded = record_every_type(
        account, me=me, other=someone_else, my_key=my_key, others_key=others_key
    )
    scopes = expand_implied(scopes_allowed_for(role, is_staff=False))

    in_sql = set(
        Event.objects.filter(pk__in=[e.pk for e in recorded.values()])
        .filter(visible_events_q(role=role, user_id=me.id, scopes=scopes))
        .values_list("pk", flat=True)
    )

    assert {label for label, e in recorded.items() if e.pk in in_sql} == EXPECTED[role]
    assert {
        label
        for label, event in recorded.items()
        if can_see(event, role=role, user_id=me.id, scopes=scopes)
    } == EXPECTED[role]


# --- GET /v1/events ------------------------------------------------------------------------


@pytest.mark.parametrize("role", list(Role))
def test_the_log_shows_each_role_what_it_may_see(
    role, account, someone_else, client_for, django_assert_max_num_queries
):
    me = MembershipFactory(account=account, role=role).user
    my_key, token = key_of(me, account, role)
    others_key, _ = key_of(someone_else, account, Role.DEVELOPER)
    Event.objects.all().delete()
    recorded = record_every_type(
        account, me=me, other=someone_else, my_key=my_key, others_key=others_key
    )
    api = client_for(token)

    response = api.get("/v1/events?per_page=100")

    if role in API_REFUSED:
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "insufficient_scope"
        return
    assert response.status_code == 200, response.content
    listed = {event["id"] for event in response.json()["data"]["events"]}
    # The catalogue has outgrown one page of 100: the rest of the pages too.
    for page in range(2, response.json()["data"]["pagination"]["total_pages"] + 1):
        more = api.get(f"/v1/events?per_page=100&page={page}").json()["data"]["events"]
        listed |= {event["id"] for event in more}
    assert {label for label, event in recorded.items() if event.id in listed} == EXPECTED[role]
    assert response.json()["data"]["pagination"]["total"] == len(EXPECTED[role])
    for label, event in recorded.items():
        shown = api.get(f"/v1/events/{event.id}")
        if label in EXPECTED[role]:
            assert shown.status_code == 200, label
            assert shown.json()["data"]["event"]["id"] == event.id
        else:
            assert shown.status_code == 404, label
            assert shown.json()["error"]["code"] == "not_found"
    with django_assert_max_num_queries(3):
        api.get("/v1/events?type=api_key.*")


def test_a_developer_sees_events_of_their_own_keys_only(account, owner, client_for):
    developer = MembershipFactory(account=account, role=Role.DEVELOPER).user
    _, token = key_of(developer, account, Role.DEVELOPER)
    owners_key, _ = key_of(owner, account, Role.OWNER)
    api = client_for(token)

    events = api.get("/v1/events?type=api_key.*").json()["data"]["events"]

    assert [event["data"]["object"]["user"] for event in events] == [developer.id]
    hidden = Event.objects.get(type="api_key.created", object_id=owners_key.id)
    assert api.get(f"/v1/events/{hidden.id}").status_code == 404


def test_a_key_sees_only_what_its_own_scopes_open(account, owner, client_for, make_token):
    api = client_for(make_token(owner, account, ["webhooks:read", "servers:read"]))
    Event.objects.all().delete()
    for event_type in ("server.created", "bot.created", "user.login_failed", "account.updated"):
        record_event(type=event_type, account=account, object_type="x", obj={"id": "x"})
    record_event(
        type="webhook_endpoint.created",
        account=account,
        object_type="webhook_endpoint",
        obj={"id": "whe_1"},
    )

    listed = [event["type"] for event in api.get("/v1/events").json()["data"]["events"]]

    # Even an owner's key needs account:read for failed sign-ins.
    assert listed == ["webhook_endpoint.created", "server.created"]


def test_a_demoted_member_stops_seeing_at_once(account, owner, client_for):
    admin = MembershipFactory(account=account, role=Role.ADMIN)
    _, token = key_of(admin.user, account, Role.ADMIN)
    record_event(
        type="user.login_failed",
        account=account,
        object_type="user",
        obj={"id": owner.id, "email": owner.email},
        actor=Actor(ip="198.51.100.23"),
    )
    api = client_for(token)
    assert "user.login_failed" in {
        e["type"] for e in api.get("/v1/events").json()["data"]["events"]
    }

    member_change_role(membership=admin, role=Role.DEVELOPER, actor=Actor(user=owner))

    assert "user.login_failed" not in {
        e["type"] for e in api.get("/v1/events").json()["data"]["events"]
    }


# --- Webhooks ------------------------------------------------------------------------------


def delivered_labels(endpoint, recorded) -> set[str]:
    delivered = set(
        WebhookDelivery.objects.filter(endpoint=endpoint).values_list("event_id", flat=True)
    )
    return {label for label, event in recorded.items() if event.id in delivered}


@pytest.mark.parametrize("role", list(Role))
def test_an_endpoint_receives_what_its_creator_may_see(role, account, someone_else):
    # Only owners, admins and developers may create endpoints; the others stand for creators
    # demoted since, whose endpoints follow their current role.
    creator = MembershipFactory(account=account, role=role).user
    my_key, _ = key_of(creator, account, role)
    others_key, _ = key_of(someone_else, account, Role.DEVELOPER)
    endpoint, _ = endpoint_create(
        account=account, url=URL, enabled_events=["*"], actor=Actor(user=creator)
    )
    assert endpoint.created_by == creator

    recorded = record_every_type(
        account, me=creator, other=someone_else, my_key=my_key, others_key=others_key
    )

    # webhook.test only ever goes to the endpoint it tests (endpoint_send_test).
    assert delivered_labels(endpoint, recorded) == EXPECTED[role] - {"webhook.test"}


def test_demoting_the_creator_changes_what_is_delivered_from_then_on(account, owner, someone_else):
    membership = MembershipFactory(account=account, role=Role.DEVELOPER)
    creator = membership.user
    my_key, _ = key_of(creator, account, Role.DEVELOPER)
    others_key, _ = key_of(someone_else, account, Role.DEVELOPER)
    endpoint, _ = endpoint_create(
        account=account, url=URL, enabled_events=["*"], actor=Actor(user=creator)
    )
    every = {"me": creator, "other": someone_else, "my_key": my_key, "others_key": others_key}
    before = record_every_type(account, **every)

    member_change_role(membership=membership, role=Role.BILLING, actor=Actor(user=owner))
    as_billing = record_every_type(account, **every)
    member_change_role(membership=membership, role=Role.VIEWER, actor=Actor(user=owner))
    as_viewer = record_every_type(account, **every)

    assert delivered_labels(endpoint, before) == EXPECTED[Role.DEVELOPER] - {"webhook.test"}
    assert delivered_labels(endpoint, as_billing) == EXPECTED[Role.BILLING]
    assert delivered_labels(endpoint, as_viewer) == EXPECTED[Role.VIEWER] - {"webhook.test"}


def test_an_endpoint_whose_creator_left_sees_what_a_viewer_sees(account, owner, someone_else):
    membership = MembershipFactory(account=account, role=Role.ADMIN)
    creator = membership.user
    my_key, _ = key_of(creator, account, Role.ADMIN)
    others_key, _ = key_of(someone_else, account, Role.DEVELOPER)
    endpoint, _ = endpoint_create(
        account=account, url=URL, enabled_events=["*"], actor=Actor(user=creator)
    )

    member_remove(membership=membership, actor=Actor(user=owner))
    recorded = record_every_type(
        account, me=creator, other=someone_else, my_key=my_key, others_key=others_key
    )

    assert delivered_labels(endpoint, recorded) == EXPECTED[Role.VIEWER] - {"webhook.test"}


def test_an_endpoint_of_a_deactivated_or_unknown_creator_sees_what_a_viewer_sees(
    account, owner, someone_else
):
    deactivated = MembershipFactory(account=account, role=Role.OWNER).user
    my_key, _ = key_of(deactivated, account, Role.OWNER)
    others_key, _ = key_of(someone_else, account, Role.DEVELOPER)
    of_deactivated, _ = endpoint_create(
        account=account, url=URL, enabled_events=["*"], actor=Actor(user=deactivated)
    )
    of_system, _ = endpoint_create(account=account, url=URL, enabled_events=["*"], actor=SYSTEM)
    deactivated.is_active = False
    deactivated.save(update_fields=["is_active"])

    recorded = record_every_type(
        account, me=deactivated, other=someone_else, my_key=my_key, others_key=others_key
    )

    assert of_system.created_by is None
    for endpoint in (of_deactivated, of_system):
        assert delivered_labels(endpoint, recorded) == EXPECTED[Role.VIEWER] - {"webhook.test"}


def test_pointing_an_endpoint_elsewhere_makes_it_act_as_whoever_did(account, owner, someone_else):
    endpoint, _ = endpoint_create(
        account=account, url=URL, enabled_events=["api_key.*"], actor=Actor(user=owner)
    )
    key_of(owner, account, Role.OWNER)
    assert WebhookDelivery.objects.filter(endpoint=endpoint).count() == 1

    # A developer may not redirect what the owner's endpoint sees to a server of their own.
    endpoint = endpoint_update(
        endpoint=endpoint, url="https://93.184.215.15/mine", actor=Actor(user=someone_else)
    )
    api_key_create(account=account, user=owner, name="Second", scopes=["servers:read"])
    endpoint_update(endpoint=endpoint, description="Same URL, same rights", actor=Actor(user=owner))

    endpoint.refresh_from_db()
    assert endpoint.created_by == someone_else
    assert WebhookDelivery.objects.filter(endpoint=endpoint).count() == 1


def test_the_fan_out_reads_every_endpoint_and_its_creators_role_in_one_query(
    account, owner, someone_else, django_assert_num_queries
):
    viewers = [MembershipFactory(account=account, role=Role.VIEWER).user for _ in range(3)]
    for creator in [*viewers, someone_else, None]:
        endpoint_create(account=account, url=URL, enabled_events=["*"], actor=Actor(user=creator))
    owners_key, _ = key_of(owner, account, Role.OWNER)
    event = Event.objects.create(
        account=account,
        type="api_key.created",
        object_type="api_key",
        data={"object": ApiKeySerializer(owners_key).data},
    )

    # Five endpoints subscribed to everything, none whose creator may see another's key.
    with django_assert_num_queries(1):
        assert deliveries_for_event(event) == []

    endpoint_create(account=account, url=URL, enabled_events=["*"], actor=Actor(user=owner))
    with CaptureQueriesContext(connection) as one_delivery:
        assert len(deliveries_for_event(event)) == 1
    # The endpoints; holding the chosen ones against deletion (PostgreSQL: their account's row,
    # then them, the lock order of webhooks.services.delivery); the delivery, its task.
    assert len(one_delivery) <= 5, [q["sql"] for q in one_delivery]


# --- The migration -------------------------------------------------------------------------


def test_the_migration_takes_the_creator_from_the_log(account, owner, someone_else):
    migration = importlib.import_module("webhooks.migrations.0002_webhookendpoint_created_by")
    created, _ = endpoint_create(
        account=account, url=URL, enabled_events=["*"], actor=Actor(user=owner)
    )
    moved, _ = endpoint_create(
        account=account, url=URL, enabled_events=["*"], actor=Actor(user=owner)
    )
    endpoint_update(endpoint=moved, url="https://93.184.215.15/x", actor=Actor(user=someone_else))
    endpoint_update(endpoint=moved, description="later", actor=Actor(user=owner))
    forgotten, _ = endpoint_create(
        account=account, url=URL, enabled_events=["*"], actor=Actor(user=owner)
    )
    Event.objects.filter(object_id=forgotten.id).delete()
    WebhookEndpoint.objects.update(created_by=None)

    migration.backfill_created_by(apps, None)

    assert {e.id: e.created_by_id for e in WebhookEndpoint.objects.all()} == {
        created.id: owner.id,
        moved.id: someone_else.id,
        forgotten.id: None,
    }
