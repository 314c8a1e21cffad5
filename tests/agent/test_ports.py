"""Several ports per server (issue 32) under the real agent and its sandbox: the spec's
allocations are forwarded into the server's network namespace, each by its name
({{SERVER_PORT}}, {{PORT_QUERY}}), and a port the server listens on that it was not given is not
reachable from the node."""

import shlex
import socket
import sys
from pathlib import Path

import pytest

from agent import sandbox
from agent.errors import ValidationFailed
from agent.spec import parse_spec
from tests.agent.conftest import PYTHON, gameserver_spec, needs_python_for_nobody, wait_until
from tests.agent.harness import IS_ROOT, free_port

needs_root = pytest.mark.skipif(not IS_ROOT, reason="the sandbox needs a root agent")

# Listens on every port named on its command line (TCP), answering each connection with the
# port it came in on, then says it is ready.
LISTENER = """
import socket, sys, threading
def serve(port):
    sock = socket.socket(); sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("0.0.0.0", port)); sock.listen()
    while True:
        conn, _ = sock.accept(); conn.sendall(str(port).encode()); conn.close()
ports = [int(p) for p in sys.argv[1:]]
for port in ports:
    threading.Thread(target=serve, args=(port,), daemon=True).start()
print("listening", *ports, flush=True)
threading.Event().wait()
"""


def answer(port: int) -> str | None:
    """What the node's 127.0.0.1:port answers, or None when nothing does."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
            conn.settimeout(2)
            return conn.recv(16).decode() or None
    except OSError:
        return None


@needs_root
def test_a_server_is_reachable_on_each_of_its_allocations_and_on_nothing_else(agent, make_server):
    needs_python_for_nobody()
    game, query, unallocated = free_port(), free_port(), free_port()
    python = shlex.quote(PYTHON or sys.executable)
    spec = gameserver_spec(
        "srv_placeholder",
        game,
        start_command=(
            f"{python} -c {shlex.quote(LISTENER)} {{{{SERVER_PORT}}}} {{{{PORT_QUERY}}}}"
            f" {unallocated}"
        ),
        ready_pattern=r"^listening",
        stop_command="",
    )
    spec["allocations"] = [
        {"ip": "127.0.0.1", "port": game, "name": "game"},
        {"ip": "127.0.0.1", "port": query, "name": "query"},
    ]
    server = make_server(spec=spec)
    assert server.post("start").status_code == 200
    wait_until(lambda: any(line.startswith("listening") for line in server.logs()), 20)
    assert f"listening {game} {query} {unallocated}" in server.logs()
    wait_until(lambda: answer(game) == str(game), 10)
    assert answer(query) == str(query)
    # Listening inside the sandbox on a port it was not given reaches nobody on the node.
    assert answer(unallocated) is None


@needs_root
def test_a_port_for_udp_only_is_not_reachable_over_tcp(agent, make_server):
    needs_python_for_nobody()
    game, query = free_port(), free_port()
    python = shlex.quote(PYTHON or sys.executable)
    spec = gameserver_spec(
        "srv_placeholder",
        game,
        start_command=(
            f"{python} -c {shlex.quote(LISTENER)} {{{{SERVER_PORT}}}} {{{{PORT_QUERY}}}}"
        ),
        ready_pattern=r"^listening",
        stop_command="",
    )
    spec["allocations"] = [
        {"ip": "127.0.0.1", "port": game, "name": "game", "protocol": "tcp"},
        {"ip": "127.0.0.1", "port": query, "name": "query", "protocol": "udp"},
    ]
    server = make_server(spec=spec)
    assert server.post("start").status_code == 200
    wait_until(lambda: answer(game) == str(game), 20)
    # The server listens on the query port in TCP too, but only UDP is forwarded to it.
    assert answer(query) is None


def test_the_sandbox_forwards_exactly_the_allocations_tcp_and_udp():
    tools = {"pasta": "pasta", "unshare": "unshare", "bwrap": "bwrap"}
    common = {
        "directory": Path("/srv/h"),
        "argv": ["true"],
        "environment": {},
        "read_only": {},
        "host_ports": "none",
        "tmp_bytes": None,
    }
    argv = sandbox.plan(
        tools,
        allocations=[("203.0.113.7", 27015, "both"), ("203.0.113.7", 27016, "both")],
        **common,
    ).argv
    pasta = argv[: argv.index("--")]
    assert pasta[4:12] == [
        "-t", "203.0.113.7/27015", "-t", "203.0.113.7/27016",
        "-u", "203.0.113.7/27015", "-u", "203.0.113.7/27016",
    ]  # fmt: skip
    assert pasta.count("-t") == 2 and pasta.count("-u") == 2
    bare = sandbox.plan(tools, allocations=[], **common).argv
    assert bare[4:8] == ["-t", "none", "-u", "none"]
    # Each port in the protocols it is for: a TCP-only RCON port is no UDP forward.
    argv = sandbox.plan(
        tools,
        allocations=[("0.0.0.0", 27015, "udp"), ("0.0.0.0", 27020, "tcp")],  # noqa: S104
        **common,
    ).argv
    assert argv[4:8] == ["-t", "27020", "-u", "27015"]
    only_tcp = sandbox.plan(tools, allocations=[("0.0.0.0", 1, "tcp")], **common).argv  # noqa: S104
    assert only_tcp[4:8] == ["-t", "1", "-u", "none"]


def test_the_named_ports_are_the_scripts_variables_and_an_old_spec_means_its_one_port():
    spec = gameserver_spec("srv_a", 25565)
    spec["allocations"] = [
        {"ip": "127.0.0.1", "port": 25565, "name": "game"},
        {"ip": "127.0.0.1", "port": 25566, "name": "query"},
        {"ip": "127.0.0.1", "port": 25567, "name": ""},
    ]
    parsed = parse_spec(spec, server_id="srv_a")
    values = parsed.substitutions("/w")
    assert (values["SERVER_PORT"], values["PORT_QUERY"]) == ("25565", "25566")
    assert [item.port for item in parsed.allocations] == [25565, 25566, 25567]
    old = gameserver_spec("srv_a", 25565)
    assert [(a.port, a.name) for a in parse_spec(old, server_id="srv_a").allocations] == [
        (25565, "game")
    ]
    for bad, field in (
        ([{"ip": "127.0.0.1", "port": 1, "name": "Query"}], "allocations[0].name"),
        ([{"ip": "127.0.0.1", "port": 1}, {"ip": "127.0.0.1", "port": 1}], "allocations"),
        ("127.0.0.1:1", "allocations"),
    ):
        with pytest.raises(ValidationFailed) as refused:
            parse_spec({**old, "allocations": bad}, server_id="srv_a")
        assert refused.value.message.startswith(f"{field}:"), refused.value.message
