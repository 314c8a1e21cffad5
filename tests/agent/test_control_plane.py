"""The whole loop: a real control plane (Django's live server and the real worker) with a real
agent on loopback. A server of the test workload is created through the API, placed on the
node, installed and started through the agent driver; its port answers; its console streams and
takes a command with a token from the API; a crash reaches the control plane and the server is
restarted; usage samples arrive; stop is graceful, kill immediate, delete frees everything."""

import json
import socket
import time

import aiohttp
import pytest
from django.db import connection

from analytics.models import UsageLatest, UsageMinute, UsageSample
from events.models import Event
from servers.models import Allocation, Game, Server
from tests.agent.aio import run
from tests.agent.harness import CGROUP_ROOT, IS_ROOT, stop_agent
from tests.agent.loop import wait_for
from tests.servers.helpers import run_worker

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def ping(address: str) -> str:
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"ping\n")
        return sock.makefile().readline().strip()


def create_server(api, **extra) -> Server:
    answer = api.post(
        "/v1/servers",
        {
            "name": "Loop",
            "game": "test-workload",
            "region": "eu-central",
            "resources": {"memory_mb": 256, "disk_mb": 1024},
        }
        | extra,
        format="json",
    )
    assert answer.status_code == 201, answer.content
    return Server.objects.get(pk=answer.json()["data"]["server"]["id"])


def act(api, server: Server, action: str) -> Server:
    answer = api.post(f"/v1/servers/{server.id}/actions", {"type": action}, format="json")
    assert answer.status_code == 202, answer.content
    run_worker()
    server.refresh_from_db()
    return server


async def console_session(console: dict, command: str, expect: str | None) -> list[str]:
    """Open the console as the dashboard does, send ``command``, return lines up to ``expect``
    (None: return once the command is sent, for one that ends the process)."""
    lines: list[str] = []
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(console["socket_url"]) as socket_,
    ):
        await socket_.send_json({"event": "auth", "args": [console["token"]]})
        sent = False
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            message = await socket_.receive(timeout=5)
            frame = json.loads(message.data)
            if frame["event"] == "auth success" and not sent:
                await socket_.send_json({"event": "send command", "args": [command]})
                sent = True
                if expect is None:
                    return lines
            elif frame["event"] == "console output":
                lines.extend(frame["args"])
                if any(expect in line for line in lines):
                    return lines
            elif frame["event"] == "auth failed":
                raise AssertionError(frame)
    raise AssertionError(f"{expect!r} never came: {lines[-20:]}")


def test_a_server_really_runs_on_the_node(node_agent, owner_api):
    node, agent = node_agent
    server = create_server(owner_api)
    assert server.node_id == node.id
    run_worker()  # create (the spec) and install, on the agent
    server.refresh_from_db()
    assert server.status == "stopped", server.status_reason

    server = act(owner_api, server, "start")
    assert server.status == "running", server.status_reason
    assert ping(server.address) == "pong"

    console = owner_api.post(f"/v1/servers/{server.id}/console").json()["data"]["console"]
    lines = run(console_session(console, "say hello from the test", "[Server] hello"))
    assert any("Server ready on" in line for line in lines)  # the history came first

    wait_for(
        lambda: UsageSample.objects.filter(instance_id=server.id).exists(), what="a usage sample"
    )
    sample = UsageSample.objects.filter(instance_id=server.id).latest("at")
    assert sample.memory_bytes > 0 and sample.uptime_seconds >= 0
    # ... and it is in the rollups and the live figures too.
    assert UsageMinute.objects.filter(instance_id=server.id).exists()
    assert UsageLatest.objects.get(instance_id=server.id).at >= sample.at

    # A crash: reported by the agent, handled by the control plane, restarted by the worker.
    run(console_session(console, "crash", None))
    wait_for(
        lambda: Event.objects.filter(type="server.crashed", object_id=server.id).exists(),
        what="the crash report",
    )
    crashed = Event.objects.get(type="server.crashed", object_id=server.id)
    assert "exited with code 3" in crashed.data["object"]["status_reason"]
    run_worker()  # the automatic restart
    server.refresh_from_db()
    assert server.status == "running"
    assert ping(server.address) == "pong"

    started = time.monotonic()
    server = act(owner_api, server, "stop")
    assert server.status == "stopped"
    assert "Stopping server" in "\n".join(
        agent.api().get(f"/api/servers/{server.id}/logs").json()["lines"]
    )
    assert time.monotonic() - started < 5  # the stop command, not the timeout's kill

    act(owner_api, server, "start")
    server = act(owner_api, server, "kill")
    assert server.status == "stopped"
    assert agent.api().get(f"/api/servers/{server.id}").json()["status"] == "stopped"

    answer = owner_api.delete(f"/v1/servers/{server.id}")
    assert answer.status_code == 202
    run_worker()
    server.refresh_from_db()
    assert server.deleted_at is not None
    assert Allocation.objects.get(node=node).server_id is None
    assert agent.api().get(f"/api/servers/{server.id}").status_code == 404


def test_a_failed_start_fails_the_action_with_the_agents_reason(node_agent, owner_api):
    server = create_server(owner_api, variables={"READY_DELAY": 0})
    run_worker()
    Game.objects.filter(slug="test-workload").update(
        template={**Game.objects.get(slug="test-workload").template, "start_command": "exit 7"}
    )
    server = act(owner_api, server, "start")
    assert server.status == "stopped"
    assert "7" in server.status_reason


def test_an_unreachable_node_fails_the_action_with_a_sentence(node_agent, owner_api):
    node, agent = node_agent
    server = create_server(owner_api)
    stop_agent(agent)
    run_worker()
    server.refresh_from_db()
    assert server.status == "install_failed"
    assert server.status_reason == f"The node {node.name} cannot be reached right now."


@pytest.mark.skipif(
    not (IS_ROOT and (CGROUP_ROOT / "memory").is_dir()), reason="needs cgroup v1 memory as root"
)
def test_a_leaking_server_is_killed_at_its_limit_and_restarted(node_agent, owner_api):
    server = create_server(owner_api)
    run_worker()
    server = act(owner_api, server, "start")
    console = owner_api.post(f"/v1/servers/{server.id}/console").json()["data"]["console"]
    run(console_session(console, "leak 400", None))
    wait_for(
        lambda: Event.objects.filter(type="server.crashed", object_id=server.id).exists(),
        what="the OOM report",
    )
    crashed = Event.objects.get(type="server.crashed", object_id=server.id)
    assert "out of memory" in crashed.data["object"]["status_reason"]
    run_worker()
    server.refresh_from_db()
    assert server.status == "running"


if connection.vendor == "sqlite":  # pragma: no cover - documented skip
    pytestmark = [
        pytestmark,
        pytest.mark.skip(
            reason="the live server shares SQLite's in-memory test database with the test's "
            "thread; this loop runs on PostgreSQL"
        ),
    ]


def test_a_bot_runs_from_its_uploaded_code_with_its_token_in_the_environment_only(
    node_agent, owner_api, settings, tmp_path
):
    import io
    import tarfile
    from pathlib import Path

    from django.core.files.uploadedfile import SimpleUploadedFile

    _, agent = node_agent
    settings.MEDIA_ROOT = str(tmp_path)
    code = (Path(__file__).resolve().parents[2] / "agent" / "workloads" / "bot.py").read_bytes()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as bundle:
        info = tarfile.TarInfo("my-bot/bot.py")
        info.size = len(code)
        bundle.addfile(info, io.BytesIO(code))
    token = "MTA1.discord-token-for-the-loop-test-XYZ9"
    answer = owner_api.post(
        "/v1/bots",
        {
            "name": "Loop bot",
            "region": "eu-central",
            "runtime": "python-3.13",
            "start_command": "python bot.py",
            "token": token,
            "resources": {"memory_mb": 256, "disk_mb": 1024},
        },
        format="json",
    )
    assert answer.status_code == 201, answer.content
    bot_id = answer.json()["data"]["bot"]["id"]
    uploaded = owner_api.post(
        f"/v1/bots/{bot_id}/source",
        {"file": SimpleUploadedFile("my-bot.tar.gz", buffer.getvalue())},
        format="multipart",
    )
    assert uploaded.status_code == 200, uploaded.content
    run_worker()  # create and install: the node fetches the archive from the control plane
    answer = owner_api.post(f"/v1/bots/{bot_id}/actions", {"type": "start"}, format="json")
    assert answer.status_code == 202, answer.content
    run_worker()
    from servers.models import Bot

    bot = Bot.objects.get(pk=bot_id)
    assert bot.status == "running", bot.status_reason
    lines = wait_for(
        lambda: [
            line
            for line in agent.api().get(f"/api/servers/{bot_id}/logs").json()["lines"]
            if "Logged in as" in line
        ],
        what="the bot's login line",
    )
    assert token[-4:] in lines[0] and token not in lines[0]
    assert token not in agent.log()
    assert token not in (agent.data_root / "state.json").read_text()
