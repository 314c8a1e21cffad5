"""Bots: code from git or an archive, a runtime, a secret token passed only to the process."""

import io
import os
import secrets
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.agent.conftest import needs_python_for_nobody
from tests.agent.harness import IS_ROOT, REPO
from tests.agent.test_lifecycle import workload_of

BOT_SOURCE = (REPO / "agent" / "workloads" / "bot.py").read_bytes()


def bot_spec(source: dict | None, *, runtime: str = "python-test", token: str = "") -> dict:
    return {
        "kind": "bot",
        "template": {
            "install_script": "",
            "start_command": "python3 bot.py --heartbeat 1",
            "ready_pattern": "^Bot ready$",
            "stop_command": "",
            "stop_signal": "SIGTERM",
            "stop_timeout_seconds": 5,
            "ready_timeout_seconds": 20,
        },
        "variables": {},
        "environment": {"DISCORD_TOKEN": token} if token else {},
        "limits": {"memory_mb": 256, "cpu_percent": 50, "disk_mb": 200, "pids": 64},
        "allocation": None,
        "runtime": runtime,
        "source": source,
    }


def discord_token() -> str:
    return f"MTA{secrets.token_urlsafe(24)}.{secrets.token_urlsafe(6)}.{secrets.token_urlsafe(27)}"


@pytest.fixture
def bot_repository(test_root) -> Path:
    """A git repository with the bot and an (empty) requirements.txt, readable by nobody."""
    repository = test_root / "bot-repo"
    repository.mkdir()
    (repository / "bot.py").write_bytes(BOT_SOURCE)
    (repository / "requirements.txt").write_text("# the bot needs nothing beyond Python\n")
    git = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com"]
    for command in (
        ["init", "-q", "-b", "main"],
        ["add", "."],
        ["commit", "-q", "-m", "The bot"],
    ):
        subprocess.run([*git, *command], cwd=repository, check=True)  # noqa: S603
    if IS_ROOT:
        # git refuses to serve a repository its user does not own ("dubious ownership").
        for folder, dirs, files in os.walk(repository):
            for name in [folder, *(os.path.join(folder, entry) for entry in dirs + files)]:
                os.lchown(name, 65534, 65534)
    return repository


def test_a_bot_from_git_installs_and_runs_with_its_token(
    make_server, agent, bot_repository, git_server
):
    needs_python_for_nobody()
    token = discord_token()
    spec = bot_spec(
        {"type": "git", "url": git_server.url(bot_repository), "ref": "main"}, token=token
    )
    bot = make_server(spec=spec)

    installed = bot.post("install")
    assert installed.status_code == 200, installed.text
    directory = agent.data_root / "servers" / bot.id
    assert (directory / "bot.py").read_bytes() == BOT_SOURCE
    assert (directory / ".venv" / "bin" / "python").exists()

    started = bot.post("start")
    assert started.status_code == 200, started.text
    logs = bot.logs()
    assert f"Logged in as TestBot#0001 (token ****{token[-4:]})" in logs
    assert "Bot ready" in logs

    python = workload_of(bot.get()["pid"])[-1]
    environment = Path(f"/proc/{python}/environ").read_bytes().split(b"\0")
    assert f"DISCORD_TOKEN={token}".encode() in environment
    path = next(entry for entry in environment if entry.startswith(b"PATH="))
    assert path.startswith(b"PATH=/home/container/.venv/bin:")

    assert bot.post("stop").json() == {"status": "stopped", "how": "graceful"}
    assert "Shutting down" in bot.logs()
    assert token not in (agent.data_root / "state.json").read_text()
    assert agent.state()["servers"][bot.id]["spec"]["environment_keys"] == ["DISCORD_TOKEN"]
    assert token not in agent.log()
    assert token not in (directory / ".console.log").read_text()


def test_a_bot_from_an_archive_of_the_control_plane(make_server, agent, control_plane):
    needs_python_for_nobody()
    content = io.BytesIO()
    with tarfile.open(fileobj=content, mode="w:gz") as archive:
        info = tarfile.TarInfo("my-bot-main/bot.py")
        info.size = len(BOT_SOURCE)
        archive.addfile(info, io.BytesIO(BOT_SOURCE))
    name = f"{secrets.token_hex(4)}.tar.gz"
    control_plane.files[name] = content.getvalue()
    spec = bot_spec({"type": "archive", "url": f"{control_plane.url}/files/{name}"}, token="t0k3n")
    bot = make_server(spec=spec)

    assert bot.post("install").status_code == 200, bot.logs()
    assert control_plane.downloads[-1]["authorization"] == f"Bearer {agent.token}"
    bot_file = agent.data_root / "servers" / bot.id / "bot.py"
    assert bot_file.read_bytes() == BOT_SOURCE
    if IS_ROOT:
        assert bot_file.stat().st_uid == agent.state()["uids"][bot.id]
    assert bot.post("start").status_code == 200
    assert "Logged in as TestBot#0001 (token ****t0k3n)" not in bot.logs()  # last four only
    assert "Logged in as TestBot#0001 (token ****0k3n)" in bot.logs()


def test_an_archive_reaching_outside_its_folder_is_refused(make_server, agent, control_plane):
    content = io.BytesIO()
    with zipfile.ZipFile(content, "w") as archive:
        archive.writestr("bot.py", BOT_SOURCE)
        archive.writestr("../../../escaped.txt", "gotcha")
    name = f"{secrets.token_hex(4)}.zip"
    control_plane.files[name] = content.getvalue()
    bot = make_server(
        spec=bot_spec({"type": "archive", "url": f"{control_plane.url}/files/{name}"})
    )

    response = bot.post("install")
    assert response.status_code == 422
    assert response.json()["error"]["message"] == (
        "The code archive holds a file outside its folder: '../../../escaped.txt'."
    )
    assert not list(agent.data_root.rglob("escaped.txt"))
    assert not (agent.data_root / "servers" / bot.id / "bot.py").exists()


def test_a_runtime_the_node_lacks_fails_the_install(make_server):
    bot = make_server(spec=bot_spec(None, runtime="node-99"))
    response = bot.post("install")
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "install_failed"
    assert error["message"].startswith("The runtime node-99 is not available on this node")
    assert bot.get()["status"] == "install_failed"


def test_a_bot_without_its_token_after_a_restart_must_be_sent_again(agents):
    needs_python_for_nobody()
    own = agents.start(with_control_plane=False)
    spec = bot_spec(None, token=discord_token())
    spec["template"]["start_command"] = "python3 {{AGENT_WORKLOADS}}/bot.py"
    path = f"/api/servers/bot_{secrets.token_hex(6)}"
    with own.api() as api:
        assert api.put(path, json=spec).status_code == 201
    own.process.terminate()
    own.process.wait(10)
    again = agents.start(data_root=own.data_root, with_control_plane=False)
    with again.api() as api:
        response = api.post(f"{path}/start")
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "secrets_missing"
        assert "DISCORD_TOKEN" in response.json()["error"]["message"]
        assert api.put(path, json=spec).status_code == 200
        assert api.post(f"{path}/start").json() == {"status": "running"}
