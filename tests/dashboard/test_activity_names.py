"""The activity pages name what an event is about and who did it, rather than showing ids: the
object's name as it is now, linked to its page, or once it is gone, the name it had, unlinked."""

import re

import pytest
from django.test import override_settings
from django.utils.html import escape

from accounts.actors import Actor
from accounts.models import ApiKey
from billing.services import balance_change, invoice_create, invoice_finalize
from billing.services.profile import BillingProfileChanges, billing_profile_update
from events.models import Event
from servers.models import Server
from servers.services import InstanceChanges, action_request, instance_update, server_create
from tests.dashboard import signed_in
from tests.factories import ServerFactory
from tests.servers.helpers import MINECRAFT, run_worker
from webhooks.services import endpoint_create, endpoint_delete


@pytest.fixture(autouse=True)
def _local_webhook_targets():
    # Endpoints may point at 127.0.0.1; nothing is ever delivered in these tests.
    with override_settings(WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE_TARGETS=True):
        yield


@pytest.fixture
def server(owner, account) -> Server:
    """“Survival SMP”, provisioned and installed by the worker."""
    created = server_create(account=account, actor=Actor(user=owner), **MINECRAFT)
    run_worker()
    return created


def endpoint_of(owner, account):
    endpoint, _ = endpoint_create(
        account=account,
        url="http://127.0.0.1:9/hook",
        enabled_events=["*"],
        description="Status page",
        actor=Actor(user=owner),
    )
    return endpoint


def object_cells(body: str) -> list[str]:
    """The Object column of the Activity page, row by row."""
    rows = re.findall(r"<tr>\s*<td><time.*?</tr>", body, re.S)
    return [re.findall(r"<td>(.*?)</td>", row, re.S)[2] for row in rows]


def test_objects_are_named_as_they_are_now_and_linked_to_their_pages(
    owner, teammate, account, server, make_token
):
    client = signed_in(owner)
    instance_update(
        instance=server, changes=InstanceChanges(name="Creative SMP"), actor=Actor(user=owner)
    )
    make_token(owner, account, ["servers:read"], name="CI deploys")
    endpoint = endpoint_of(owner, account)
    client.post(f"/settings/team/{teammate.id}/role", {"role": "viewer"})
    client.post("/settings/team/invite", {"email": "new@example.com", "role": "viewer"})

    body = client.get("/settings/activity").content.decode()
    cells = object_cells(body)
    server_link = f'<a href="/servers/{server.id}">Creative SMP</a>'
    assert cells.count(server_link) == 4  # created, two status changes, renamed
    assert f'{server_link} <span class="muted small">(create)</span>' in cells  # its action
    assert '<a href="/settings/api-keys">CI deploys</a>' in cells
    assert f'<a href="/settings/webhooks/{endpoint.id}">Status page</a>' in cells
    assert f'<a href="/settings/team">{escape(teammate.name)}</a>' in cells
    assert "new@example.com" in cells  # an invitation has no page of its own
    for shown_id in ["srv_", "act_", "key_", "whe_", "usr_", "inv_"]:
        assert not any(cell.startswith(shown_id) for cell in cells), shown_id


def test_billing_objects_are_named_and_linked_to_their_billing_pages(owner, account):
    actor = Actor(user=owner)
    billing_profile_update(
        account=account, changes=BillingProfileChanges(legal_name="Blockworks GmbH"), actor=actor
    )
    balance_change(
        account=account,
        amount=5000,
        currency="EUR",
        kind="adjustment",
        description="Welcome credit",
        actor=actor,
    )
    draft = invoice_create(
        account=account,
        currency="EUR",
        actor=actor,
        lines=[{"description": "Survival SMP, 4 GB", "quantity": 1, "unit_amount": 1200}],
    )
    invoice = invoice_finalize(invoice=draft, actor=actor)

    cells = object_cells(signed_in(owner).get("/settings/activity").content.decode())
    # The draft's event is named by the number the invoice has now.
    assert cells.count(f'<a href="/billing/invoices/{invoice.id}">{invoice.number}</a>') == 2
    assert '<a href="/billing/balance">Welcome credit</a>' in cells
    assert '<a href="/billing/profile">Blockworks GmbH</a>' in cells


def test_a_gone_object_keeps_the_name_it_had_without_a_link(owner, teammate, account, server):
    client = signed_in(owner)
    endpoint = endpoint_of(owner, account)
    client.post(f"/settings/team/{teammate.id}/role", {"role": "viewer"})
    endpoint_delete(endpoint=endpoint, actor=Actor(user=owner))
    client.post(f"/settings/team/{teammate.id}/remove")
    action_request(instance=server, action_type="delete", actor=Actor(user=owner))
    run_worker()
    assert Server.objects.get(pk=server.pk).deleted_at is not None

    body = client.get("/settings/activity").content.decode()
    cells = object_cells(body)
    assert f'href="/servers/{server.id}"' not in body
    assert 'Survival SMP <span class="muted small">(deleted)</span>' in cells
    assert 'Survival SMP <span class="muted small">(delete · deleted)</span>' in cells
    assert f"/settings/webhooks/{endpoint.id}" not in body
    assert 'Status page <span class="muted small">(deleted)</span>' in cells
    removed = f'{escape(teammate.name)} <span class="muted small">(removed)</span>'
    assert cells.count(removed) == 2  # its role change and its removal


def test_the_actor_is_the_keys_name_and_its_users_email(
    owner, account, server, make_token, client_for
):
    token = make_token(owner, account, name="CI deploys")
    client_for(token).patch(f"/v1/servers/{server.id}", {"name": "Renamed"}, format="json")
    api_key = ApiKey.objects.get(name="CI deploys")
    client = signed_in(owner)
    actor = f'CI deploys <span class="muted small">API key of {owner.email}</span>'
    for path in ["/settings/activity", f"/servers/{server.id}/activity"]:
        body = client.get(path).content.decode()
        assert f"<td>{actor}</td>" in body, path
        assert api_key.key_id not in body, path
        assert f"<td>{owner.email}</td>" in body, path  # what the owner did in person


def test_naming_costs_one_query_whatever_the_number_of_events_and_objects(
    owner, account, django_assert_max_num_queries
):
    def add_history(count: int) -> None:
        for _ in range(count):
            server = ServerFactory(account=account)
            for event_type in ["server.created", "server.updated"]:
                Event.objects.create(
                    account=account,
                    type=event_type,
                    object_type="server",
                    object_id=server.id,
                    data={"object": {"id": server.id, "name": server.name}},
                    actor_user=owner,
                )
            Event.objects.create(
                account=account,
                type="action.succeeded",
                object_type="action",
                object_id=f"act_{server.id}",
                related_id=server.id,
                data={"object": {"type": "start", "target": {"type": "server", "id": server.id}}},
            )

    client = signed_in(owner)
    add_history(2)
    with django_assert_max_num_queries(7) as few:
        client.get("/settings/activity")
    add_history(20)
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = client.get("/settings/activity")
    assert len(response.context["events"]) == 50
    assert all(event.subject.url for event in response.context["events"])


@pytest.mark.parametrize(
    ("language", "change", "action"),
    [
        ("en", "Stopped → Starting", "Start: Succeeded"),
        ("de", "Gestoppt → Startet", "Starten: Erfolgreich"),
    ],
)
def test_a_servers_activity_says_its_changes_by_their_labels_in_the_pages_language(
    owner, account, server, language, change, action
):
    """Not the raw codes ("stopped → starting", "start succeeded"): statuses and actions by the
    labels the rest of the page uses, translated."""
    action_request(instance=server, action_type="start", actor=Actor(user=owner))
    run_worker()
    owner.language = language
    owner.save(update_fields=["language"])
    body = signed_in(owner).get(f"/servers/{server.id}/activity").content.decode()
    assert change in body
    assert action in body
    assert "stopped → starting" not in body
