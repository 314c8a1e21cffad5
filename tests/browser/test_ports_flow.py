"""The Ports tab in a real browser (issue 32): the owner adds a port with a note and makes it
primary; on a phone nothing scrolls sideways."""

import pytest

from accounts.actors import SYSTEM
from servers.services import server_create
from servers.services.nodes import node_allocations_add, node_create
from tests.browser.test_console_flow import PASSWORD, PHONE
from tests.browser.test_databases_flow import wide_elements

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def server(account):
    node, _ = node_create(
        name="fra-1",
        region="eu-central",
        agent_url="http://127.0.0.1:9",
        memory_mb=8192,
        disk_mb=102400,
        cpu_percent=800,
        actor=SYSTEM,
    )
    node_allocations_add(node=node, ip="127.0.0.1", ports="25565-25570", actor=SYSTEM)
    server = server_create(
        account=account,
        name="SMP",
        game="minecraft-java",
        region="eu-central",
        variables={"EULA": True},
        resources={"memory_mb": 2048, "disk_mb": 10240},
        actor=SYSTEM,
    )
    server.plan = {"allocation_limit": 3}
    server.save(update_fields=["plan"])
    return server


def test_add_a_port_and_make_it_primary_on_a_phone(page, owner, server, screenshot):
    page.goto("/login")
    page.get_by_label("E-mail").fill(owner.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url("/")
    page.set_viewport_size(PHONE)
    page.goto(f"/servers/{server.id}")
    page.get_by_role("navigation", name="Server").get_by_role("link", name="Ports").click()
    page.wait_for_url(f"/servers/{server.id}/ports")
    expect(page.locator("#port-add-form")).to_be_visible()
    page.locator("#port-number").fill("25569")
    page.locator("#port-note").fill("Voice chat")
    page.locator("#port-add-button").click()
    row = page.locator('tr[data-port="25569"]')
    expect(row).to_contain_text("127.0.0.1:25569")
    expect(row.locator("input[name=note]")).to_have_value("Voice chat")
    assert wide_elements(page) == (PHONE["width"], [])
    screenshot("ports-phone")
    row.get_by_role("button", name="Make primary").click()
    expect(page.locator('tr[data-port="25569"]')).to_contain_text("Primary")
    server.refresh_from_db()
    assert server.address == "127.0.0.1:25569"
