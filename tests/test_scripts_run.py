"""``./scripts/run`` as a newcomer starts it, in a subprocess: on its own free port, var/ and
SQLite database, with the local node agent. The web process is gunicorn with production's
gunicorn.conf.py (``WEB_CONCURRENCY`` workers, an access log in var/, WhiteNoise's static
files), never Django's development server; the agent starts only once /healthz answers, so its
log has no "hello failed"; the printed example creates the test workload, which installs
without the internet; Ctrl-C (SIGINT) stops every process it started.

It migrates and seeds a fresh database, so it takes about a minute (longer on a busy machine);
it opens no test database, so a run on a second database leaves it out (tests/conftest.py).
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

# Set by the test environment for the suite's own processes; scripts/run chooses its own.
NOT_PASSED = (
    "DATABASE_URL",
    "REDIS_URL",
    "RATE_LIMIT_SQLITE_PATH",
    "MEDIA_ROOT",
    "DEBUG",
    "SITE_URL",
    "ALLOWED_HOSTS",
    "GUNICORN_BIND",
    "GUNICORN_ACCESS_LOG",
    "DJANGO_SETTINGS_MODULE",
)
STARTUP_SECONDS = 300  # migrate and seed a fresh database, on a machine running other tests


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def descendants(pid: int) -> dict[int, str]:
    """Every process under ``pid`` (children, their children...): pid → command line."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue  # gone meanwhile
        # The fields after the command (in parentheses, which may hold spaces): state, ppid.
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        commands[int(entry.name)] = command
    found, frontier = {}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in found:
                found[child] = commands[child]
                frontier.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def get(url: str) -> tuple[int, dict[str, str], bytes]:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return answer.status, dict(answer.headers), answer.read()


@pytest.fixture
def agent_data():
    """The agent's folder where the users it runs servers as reach it (pytest's tmp_path sits
    in a folder of mode 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="hms-run-agent-"))
    folder.chmod(0o711)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
def test_scripts_run_serves_with_gunicorn_starts_the_agent_after_it_and_stops_on_ctrl_c(
    tmp_path, agent_data
):
    port, agent_port = free_port(), free_port()
    var = tmp_path / "var"
    env = {key: value for key, value in os.environ.items() if key not in NOT_PASSED}
    env |= {
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "VAR_DIR": str(var),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "WEB_CONCURRENCY": "3",
        "LOCAL_AGENT": "1",
        "AGENT_PORT": str(agent_port),
        "AGENT_DATA_ROOT": str(agent_data),
    }
    output = tmp_path / "run.log"
    with output.open("wb") as log:
        run = subprocess.Popen(  # noqa: S603 - the project's own script
            [str(Path(settings.BASE_DIR) / "scripts" / "run")],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, as a terminal gives it
        )
    base = f"http://127.0.0.1:{port}"
    started: dict[int, str] = {}
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while "curl -s" not in output.read_text(errors="replace"):
            assert run.poll() is None, output.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, output.read_text(errors="replace")[-3000:]
            time.sleep(0.5)
        printed = output.read_text(errors="replace")

        # Production's server, not the development server.
        status, headers, _ = get(f"{base}/healthz")
        assert status == 200 and headers["Server"].startswith("gunicorn")
        assert "Starting development server" not in printed
        assert "Do not use it in a production setting" not in printed
        assert f"Listening at: {base}" in printed  # gunicorn's own line, on the same address
        started = descendants(run.pid)
        masters = [
            pid
            for pid, command in started.items()
            if "gunicorn" in command and "gunicorn" not in started.get(_parent(pid), "")
        ]
        assert len(masters) == 1, started
        workers = [pid for pid in started if _parent(pid) == masters[0]]
        assert len(workers) == 3, started  # WEB_CONCURRENCY
        assert "gunicorn.conf.py" in started[masters[0]]
        assert not [command for command in started.values() if "runserver" in command]
        assert [command for command in started.values() if "db_worker" in command]
        assert [command for command in started.values() if "housekeeping" in command]
        agents = [pid for pid, command in started.items() if command.endswith("-m agent")]
        assert len(agents) == 1, started

        # WhiteNoise serves the collected static files; every request goes to the access log.
        status, headers, body = get(f"{base}/static/js/staff_reports.js")
        assert status == 200 and b"staff-reports" in body
        access = var / "access.log"
        deadline = time.monotonic() + 10  # a worker writes its line once the answer is sent
        while '"GET /static/js/staff_reports.js HTTP/1.1" 200' not in access.read_text():
            assert time.monotonic() < deadline, access.read_text()
            time.sleep(0.1)
        assert '"GET /healthz HTTP/1.1" 200' in access.read_text()

        # The example creates the test workload; the agent's first hello was answered.
        assert '"game": "test-workload"' in printed and '"region": "eu-central"' in printed
        assert '"game": "minecraft-java"' not in printed
        # The staff banner keeps the demo staff member's authenticator key.
        assert re.search(r"holding the key\n +[A-Z2-7]{16,} \(staff sign in", printed), printed
        agent_log = var / "agent.log"
        deadline = time.monotonic() + 30
        while "hello: " not in agent_log.read_text(errors="replace"):
            assert time.monotonic() < deadline, agent_log.read_text(errors="replace")
            time.sleep(0.25)
        assert "hello failed" not in agent_log.read_text(errors="replace")
    finally:
        # Ctrl-C, as the script itself receives it (its trap stops the rest).
        if run.poll() is None:
            run.send_signal(signal.SIGINT)
        try:
            run.wait(timeout=60)
        finally:
            left = [pid for pid in started if alive(pid)]
            for pid in left:  # never leave a process behind, even when the test fails
                os.kill(pid, signal.SIGKILL)
    assert run.returncode == 130
    assert left == [], {pid: started[pid] for pid in left}


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return 0
