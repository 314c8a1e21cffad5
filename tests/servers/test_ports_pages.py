"""The Ports tab of a server (issue 32): the owner reads its allocations and adds, renames,
makes primary and removes them through the page; a sub-user needs settings.read to see the tab
and settings.write to change anything; an outsider gets 404."""

import pytest

from accounts.roles import Role
from servers.models import Allocation, ServerGrant
from tests.dashboard import messages_of, signed_in
from tests.factories import MembershipFactory
from tests.servers.test_allocations import placed  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db


def do(client, server, **form):
    return client.post(f"/servers/{server.pk}/ports/do", form, follow=True)


def test_the_owner_manages_the_ports_on_the_page(owner, account, placed):  # noqa: F811
    client = signed_in(owner, account)
    page = client.get(f"/servers/{placed.pk}/ports")
    assert page.status_code == 200
    text = page.content.decode()
    assert 'id="ports-link"' in text and "127.0.0.1:25565" in text and "Primary" in text
    answer = do(client, placed, op="add", port="25569", note="Voice chat")
    assert "127.0.0.1:25569 is now this server's too." in messages_of(answer)
    extra = Allocation.objects.get(server=placed, port=25569)
    assert extra.note == "Voice chat"
    do(client, placed, op="note", allocation_id=extra.public_id, note="Voice")
    extra.refresh_from_db()
    assert extra.note == "Voice"
    do(client, placed, op="primary", allocation_id=extra.public_id)
    placed.refresh_from_db()
    assert placed.address == "127.0.0.1:25569"
    old = Allocation.objects.get(server=placed, port=25565)
    answer = do(client, placed, op="remove", allocation_id=old.public_id)
    assert "127.0.0.1:25565 went back to the node." in messages_of(answer)
    assert not Allocation.objects.filter(port=25565).exclude(server=None).exists()
    full = do(client, placed, op="add", port="abc")
    assert "A port is a whole number." in messages_of(full)


def test_a_sub_user_needs_settings_read_to_see_and_settings_write_to_change(
    account,
    placed,  # noqa: F811
):
    guest = MembershipFactory(account=account, role=Role.GUEST).user
    grant = ServerGrant.objects.create(
        account=account, server=placed, user=guest, permissions=["console.view"]
    )
    client = signed_in(guest, account)
    assert client.get(f"/servers/{placed.pk}/ports").status_code == 302
    grant.permissions = ["settings.read"]
    grant.save()
    page = client.get(f"/servers/{placed.pk}/ports")
    assert page.status_code == 200 and "port-add-form" not in page.content.decode()
    do(client, placed, op="add")
    assert Allocation.objects.filter(server=placed).count() == 1
    grant.permissions = ["settings.read", "settings.write"]
    grant.save()
    do(client, placed, op="add")
    assert Allocation.objects.filter(server=placed).count() == 2


def test_an_outsider_gets_404(outsider, other_account, placed):  # noqa: F811
    client = signed_in(outsider, other_account)
    assert client.get(f"/servers/{placed.pk}/ports").status_code == 404
    assert client.post(f"/servers/{placed.pk}/ports/do", {"op": "add"}).status_code == 404
