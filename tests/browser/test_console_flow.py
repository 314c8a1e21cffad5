"""The console tab in a real browser, against a real node agent.

The control plane is the live server; a real agent (``python -m agent``) on loopback reports to
it, and the real worker creates, installs and starts a server of the test workload on it. The
owner signs in, opens the server, clicks Console: xterm.js shows the server's output from the
agent's WebSocket, a command typed in the input reaches the process and its answer comes back,
and the Live usage figures follow the socket's ``stats`` events. On a phone the terminal and the
command input fit the screen and work.
"""

import re

import pytest

from analytics.models import UsageSample
from servers.models import Server, ServerStatus
from tests.agent.conftest import PYTHON
from tests.agent.loop import node_with_agent, reachable_folder
from tests.servers.helpers import run_worker

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PASSWORD = "correct-horse-battery"  # what tests.factories.UserFactory sets
PHONE = {"width": 390, "height": 844}
# The test workload's own lines (agent/workloads/gameserver.py).
READY = "Server ready on"
DASH = "\u2013"  # the page's placeholder for a figure not measured yet
# A figure the socket filled in, not the placeholder.
CPU_FIGURE = re.compile(r"^\d+\.\d %\s*$")
MEMORY_FIGURE = re.compile(r"^\d+(\.\d)? (B|KB|MB|GB) of 256 MB\s*$")
UPTIME_FIGURE = re.compile(r"^(\d+d )?(\d+h )?\d+m\s*$")
MEASURED_FIGURE = re.compile(r"^\d{1,2}:\d{2}:\d{2}( [AP]M)?$")


@pytest.fixture
def node_agent(live_server):
    """A node whose real agent reports to the live server (plain HTTP, see conftest.py).

    It samples usage twice a second, so the console's socket carries ``stats`` events soon, but
    posts its samples to the control plane only once an hour: the figures the page shows can
    then only have come from the socket, never from the page's own rendering.
    """
    if PYTHON is None:
        pytest.skip("no Python interpreter that the unprivileged user may run")
    with (
        reachable_folder("hms-console-browser-") as root,
        node_with_agent(
            live_server.url,
            root,
            name="console-1",
            AGENT_SAMPLE_SECONDS="0.5",
            AGENT_BATCH_SECONDS="3600",
        ) as (node, agent),
    ):
        yield node, agent


@pytest.fixture
def running_server(node_agent, owner_api) -> Server:
    """A server of the test workload, created through the API, placed on the node, installed
    and started by the real worker."""
    node, agent = node_agent
    answer = owner_api.post(
        "/v1/servers",
        {
            "name": "Console SMP",
            "game": "test-workload",
            "region": "eu-central",
            "resources": {"memory_mb": 256, "disk_mb": 1024},
        },
        format="json",
    )
    assert answer.status_code == 201, answer.content
    server = Server.objects.get(pk=answer.json()["data"]["server"]["id"])
    assert server.node_id == node.id
    run_worker()  # create (the spec) and install, on the agent
    server.refresh_from_db()
    assert server.status == ServerStatus.STOPPED, (server.status_reason, agent.log())
    answer = owner_api.post(f"/v1/servers/{server.id}/actions", {"type": "start"}, format="json")
    assert answer.status_code == 202, answer.content
    run_worker()
    server.refresh_from_db()
    assert server.status == ServerStatus.RUNNING, (server.status_reason, agent.log())
    return server


def sign_in(page, user) -> None:
    page.goto("/login")
    page.get_by_label("E-mail").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url("/")


def open_console(page, server: Server):
    """From the servers list to the server's page, then its Console tab; returns the page's
    rendered terminal rows once the socket is authenticated."""
    page.get_by_role("link", name=server.name).first.click()
    page.wait_for_url(f"/servers/{server.id}")
    tabs = page.get_by_role("navigation", name="Server")
    console_tab = tabs.get_by_role("link", name="Console")
    expect(console_tab).to_be_visible()
    console_tab.click()
    page.wait_for_url(f"/servers/{server.id}/console")
    expect(page.get_by_role("heading", level=1)).to_contain_text(server.name)
    expect(console_tab).to_have_attribute("aria-current", "page")
    expect(page.locator("#console-state")).to_have_text("Connected", timeout=15_000)
    return page.locator("#terminal .xterm-rows")


def send_command(page, rows, command: str, answer: str) -> None:
    """Type ``command`` and press Enter; wait for the process's ``answer`` in the terminal."""
    expect(rows).not_to_contain_text(answer)
    command_input = page.get_by_role("textbox", name="Command")
    expect(command_input).to_be_enabled()
    command_input.fill(command)
    command_input.press("Enter")
    expect(rows).to_contain_text(answer, timeout=15_000)
    expect(command_input).to_have_value("")  # sent, so cleared for the next one


def test_the_console_shows_output_takes_commands_and_live_usage(
    page, owner, running_server, screenshot
):
    server = running_server
    sign_in(page, owner)

    # No sample reached the control plane: the page itself renders placeholders.
    assert not UsageSample.objects.filter(instance_id=server.id).exists()
    html = page.request.get(f"/servers/{server.id}/console").text()
    for figure in ("cpu_percent", "memory_bytes"):
        assert re.search(rf'data-usage="{figure}">\s*{DASH}\s*<', html), html

    rows = open_console(page, server)
    # The agent's history of the process's output comes first.
    expect(rows).to_contain_text(READY, timeout=15_000)
    expect(rows).to_contain_text(f"{READY} {server.address}")

    send_command(page, rows, "say hello browser", "[Server] hello browser")
    # The command typed is echoed in the terminal, as a terminal would (issue 34).
    expect(rows).to_contain_text("> say hello browser")

    # The Live usage figures come from the socket's stats events.
    usage = page.get_by_role("region", name="Live usage")
    expect(usage.locator('[data-usage="cpu_percent"]')).to_have_text(CPU_FIGURE)
    expect(usage.locator('[data-usage="memory_bytes"]')).to_have_text(MEMORY_FIGURE)
    expect(usage.locator('[data-usage="uptime_seconds"]')).to_have_text(UPTIME_FIGURE)
    measured = usage.locator('[data-usage="at"]')
    expect(measured).to_have_text(MEASURED_FIGURE)  # the sample's time alone, not "… not yet"
    expect(measured.locator("time")).to_have_attribute("datetime", re.compile(r"^\d{4}-"))
    assert not UsageSample.objects.filter(instance_id=server.id).exists()
    expect(page.locator("#console-message")).to_have_text("")
    screenshot("console-desktop")


def test_on_a_phone_the_console_and_its_input_fit_and_work(page, owner, running_server, screenshot):
    server = running_server
    page.set_viewport_size(PHONE)
    sign_in(page, owner)
    rows = open_console(page, server)
    expect(rows).to_contain_text(READY, timeout=15_000)

    terminal = page.locator("#terminal")
    command_input = page.get_by_role("textbox", name="Command")
    send_button = page.locator("#command-form").get_by_role("button", name="Send")
    for element in (terminal, command_input, send_button):
        expect(element).to_be_visible()
        box = element.bounding_box()
        assert box is not None
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
    # xterm's screen was fitted to the phone's width, not left at 80 columns past its edge.
    screen = page.locator("#terminal .xterm-screen").bounding_box()
    assert screen is not None and screen["x"] + screen["width"] <= PHONE["width"], screen

    # Sending with the button works as well as Enter does.
    command_input.click()
    command_input.fill("say hello phone")
    send_button.click()
    expect(rows).to_contain_text("[Server] hello phone", timeout=15_000)
    send_command(page, rows, "list", "players online")
    # Below the console, the Live usage figures follow the socket on a phone too.
    usage = page.get_by_role("region", name="Live usage")
    expect(usage.locator('[data-usage="memory_bytes"]')).to_have_text(MEMORY_FIGURE)
    expect(usage.locator('[data-usage="cpu_percent"]')).to_have_text(CPU_FIGURE)
    screenshot("console-phone")
