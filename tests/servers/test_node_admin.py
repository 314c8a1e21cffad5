"""Staff manage nodes in the Django admin, through the node services."""

import re

import pytest
from django.contrib.messages import get_messages

from accounts.actors import SYSTEM
from accounts.models import Account
from events.models import Event
from servers.models import Allocation, Node
from servers.services import server_create
from servers.services.agent_reports import agent_hello
from servers.services.nodes import node_allocations_add, node_authenticate, node_create
from tests.accounts.test_admin import admin_url

FORM = {
    "name": "fra-1",
    "region": "eu-central",
    "agent_url": "http://127.0.0.1:8443",
    "memory_mb": "16384",
    "disk_mb": "204800",
    "cpu_percent": "800",
    "add_ip": "203.0.113.5",
    "add_ports": "25565-25569",
    "remove_ports": "",
    "allocations-TOTAL_FORMS": "0",
    "allocations-INITIAL_FORMS": "0",
}


def shown_token(response) -> str:
    text = " ".join(str(message) for message in get_messages(response.wsgi_request))
    return next(word for word in text.split() if word.startswith("hmn_"))


def test_adding_a_node_shows_its_token_once_and_fills_its_pool(staff_client):
    response = staff_client.post(admin_url(Node, "add"), FORM, follow=True)
    assert response.status_code == 200
    node = Node.objects.get()
    token = shown_token(response)
    assert node_authenticate(f"Bearer {token}") == node
    assert Allocation.objects.filter(node=node).count() == 5
    assert Event.objects.filter(type="node.created", object_id=node.id).exists()
    page = staff_client.get(admin_url(Node, "change", node.pk)).content.decode()
    assert token not in page and node.token_hint in page


def test_a_refused_change_shows_on_its_field(staff_client):
    node, _ = node_create(
        name="fra-1",
        region="eu-central",
        agent_url="http://127.0.0.1:1",
        memory_mb=4096,
        disk_mb=102400,
        cpu_percent=400,
        actor=SYSTEM,
    )
    node_allocations_add(node=node, ip="127.0.0.1", ports="25565", actor=SYSTEM)
    server_create(
        account=Account.objects.create(name="C"),
        name="s",
        game="minecraft-java",
        region="eu-central",
        variables={"EULA": True},
        resources={"memory_mb": 2048},
        actor=SYSTEM,
    )
    form = FORM | {"memory_mb": "1024", "add_ip": "", "add_ports": "", "region": ""}
    response = staff_client.post(admin_url(Node, "change", node.pk), form)
    assert response.status_code == 200  # the form again, with the error
    assert "were given 2048 already" in response.content.decode()
    node.refresh_from_db()
    assert node.memory_mb == 4096


@pytest.mark.parametrize("bad", [{"add_ports": "99999"}, {"agent_url": "ftp://x"}])
def test_bad_input_is_a_form_error_and_adds_nothing(staff_client, bad):
    response = staff_client.post(admin_url(Node, "add"), FORM | bad)
    assert response.status_code == 200
    assert not Node.objects.exists() and not Allocation.objects.exists()


def test_rotating_from_the_list_shows_the_new_token(staff_client):
    node, old = node_create(
        name="fra-1",
        region="eu-central",
        agent_url="http://127.0.0.1:1",
        memory_mb=4096,
        disk_mb=102400,
        cpu_percent=400,
        actor=SYSTEM,
    )
    response = staff_client.post(
        admin_url(Node, "changelist"),
        {"action": "rotate_token", "_selected_action": [node.pk]},
        follow=True,
    )
    new = shown_token(response)
    assert new != old and node_authenticate(f"Bearer {new}") == node


RED_FLAG = '<strong style="color: var(--error-fg, #ba2121)">NOT ISOLATED</strong>'


def said_hello(name: str, isolation: str | None) -> Node:
    node, _ = node_create(
        name=name,
        region="eu-central",
        agent_url="http://127.0.0.1:1",
        memory_mb=4096,
        disk_mb=102400,
        cpu_percent=400,
        actor=SYSTEM,
    )
    if isolation != "never":
        agent_hello(node=node, boot_id="b", version="1.0", limits="rlimit", isolation=isolation)
    return node


def test_the_list_flags_nodes_whose_tenants_are_not_isolated(staff_client):
    said_hello("sandboxed", "sandbox")
    said_hello("unsandboxed", "none")
    said_hello("older-agent", None)
    said_hello("never-seen", "never")
    page = staff_client.get(admin_url(Node, "changelist")).content.decode()
    column = dict(
        re.findall(r'field-name"><a [^>]*>([^<]+)</a>.*?field-isolation">(.*?)</td>', page)
    )
    assert column == {
        "sandboxed": "Sandbox per server and bot",
        "unsandboxed": f"{RED_FLAG} (its agent runs without the sandbox)",
        "older-agent": f"{RED_FLAG} (its agent did not say that it sandboxes them)",
        "never-seen": "-",
    }


@pytest.mark.parametrize(
    "choice, shown",
    [("sandbox", {"sandboxed"}), ("none", {"unsandboxed"}), ("unknown", {"older-agent"})],
)
def test_the_list_filters_by_isolation(staff_client, choice, shown):
    for name, isolation in [
        ("sandboxed", "sandbox"),
        ("unsandboxed", "none"),
        ("older-agent", None),
    ]:
        said_hello(name, isolation)
    response = staff_client.get(admin_url(Node, "changelist"), {"isolation": choice})
    assert {node.name for node in response.context["cl"].result_list} == shown


@pytest.mark.parametrize("isolation", ["none", None])
def test_the_page_of_a_node_without_isolation_warns(staff_client, isolation):
    node = said_hello("fra-1", isolation)
    response = staff_client.get(admin_url(Node, "change", node.pk))
    warnings = [str(m) for m in get_messages(response.wsgi_request) if m.level_tag == "warning"]
    assert len(warnings) == 1 and warnings[0].startswith("fra-1 is NOT ISOLATED")
    assert "NOT ISOLATED" in response.content.decode()


@pytest.mark.parametrize("isolation", ["sandbox", "never"])
def test_the_page_of_a_sandboxed_or_unseen_node_does_not_warn(staff_client, isolation):
    node = said_hello("fra-1", isolation)
    response = staff_client.get(admin_url(Node, "change", node.pk))
    assert response.status_code == 200
    assert "NOT ISOLATED" not in response.content.decode()
    assert not list(get_messages(response.wsgi_request))
