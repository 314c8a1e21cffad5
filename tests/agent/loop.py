"""The control plane and a real agent together: a node of the demo region whose agent reports to
a control plane on loopback, with the test workload in the catalogue. For the loop tests
(tests/agent/test_control_plane.py) and the console's browser test."""

import contextlib
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from accounts.actors import SYSTEM
from servers.catalogue import template_for
from servers.models import Game, Node
from servers.services.nodes import NodeChanges, node_allocations_add, node_create, node_update
from tests.agent.conftest import PYTHON, start_agent
from tests.agent.harness import free_port, remove_cgroup_parents, stop_agent


def wait_for(check, timeout: float = 20, what: str = "it", log=None, every: float = 0.1):
    """``check()``'s first truthy answer, asked every ``every`` s; an error after ``timeout``
    naming ``what`` (with ``log()``, the agent's log, when given)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := check():
            return result
        time.sleep(every)
    raise AssertionError(
        f"{what} did not happen within {timeout} s" + (f":\n{log()}" if log else "")
    )


@contextlib.contextmanager
def reachable_folder(prefix: str) -> Iterator[Path]:
    """A temporary folder the servers' unprivileged user can walk through (pytest's tmp_path is
    0700), removed afterwards with the agents' empty cgroup parents."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(0o711)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)
        remove_cgroup_parents()


def install_test_workload(python: str | None = PYTHON) -> None:
    """The test workload in the catalogue, run by ``python``, an interpreter the servers' user
    may run (bench/agent.py adds it the same way)."""
    assert python is not None, "no Python interpreter that the unprivileged user may run"
    entry = template_for("test-workload")
    assert entry is not None
    template = dict(entry["template"])
    template["start_command"] = template["start_command"].replace("python3", python, 1)
    Game.objects.update_or_create(
        slug="test-workload",
        defaults={
            "name": entry["name"],
            "default_port": entry["default_port"],
            "variables": entry["variables"],
            "template": template,
        },
    )


@contextlib.contextmanager
def node_with_agent(
    control_plane_url: str, data_root: Path, *, name: str = "loop-1", **agent_settings: str
) -> Iterator[tuple[Node, object]]:
    """A node of eu-central with one free port and its real agent, which has said hello to the
    control plane (so the driver's signed calls work); the agent is stopped afterwards."""
    install_test_workload()
    node, token = node_create(
        name=name,
        region="eu-central",
        agent_url="http://127.0.0.1:1",
        memory_mb=4096,
        disk_mb=20480,
        cpu_percent=200,
        actor=SYSTEM,
    )
    node_allocations_add(node=node, ip="127.0.0.1", ports=str(free_port()), actor=SYSTEM)
    agent = start_agent(
        data_root / "node",
        token=token,
        control_plane_url=control_plane_url,
        AGENT_NODE_ID=node.id,
        **agent_settings,
    )
    try:
        node = node_update(node=node, changes=NodeChanges(agent_url=agent.url), actor=SYSTEM)
        wait_for(lambda: Node.objects.get(pk=node.pk).last_seen_at, what="hello", log=agent.log)
        yield node, agent
    finally:
        stop_agent(agent)
