"""SFTP end to end: the control plane (Django's live server) answers a real agent's sign-in
questions (POST /v1/agent/sftp/auth), and OpenSSH's ``sftp`` signs in with a key registered
through the API (/v1/profile/ssh-keys): files go up and down, are renamed and deleted, a link
is refused, a key deleted through the API is refused at the next sign-in, and a Support
member's session reads but may not write; an open session ends within a second of its key's
deletion (the agent asks again)."""

import json
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest
from django.core.cache import cache

from accounts.models import SshKey
from accounts.roles import Role
from events.models import Event
from servers.models import Server
from tests.agent.conftest import PYTHON, needs_python_for_nobody
from tests.agent.harness import free_port
from tests.agent.loop import node_with_agent, wait_for
from tests.agent.test_control_plane import create_server
from tests.dashboard import signed_in
from tests.factories import MembershipFactory
from tests.servers.helpers import run_worker

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)
SFTP = shutil.which("sftp") or "/usr/bin/sftp"
KEYGEN = shutil.which("ssh-keygen") or "/usr/bin/ssh-keygen"


@pytest.fixture
def sftp_node(control_plane_url, test_root) -> Iterator[tuple[object, int]]:
    if not Path(SFTP).exists():
        pytest.skip("OpenSSH's sftp client is not installed (apt-get install openssh-client)")
    needs_python_for_nobody()
    port = free_port()
    with node_with_agent(
        control_plane_url,
        test_root,
        AGENT_RUNTIMES=json.dumps({"python-3.13": PYTHON}),
        AGENT_SFTP_LISTEN=f"127.0.0.1:{port}",
        AGENT_SFTP_RECHECK_SECONDS="1",
    ) as (node, _agent):
        yield node, port


@pytest.fixture
def server(sftp_node, owner_api) -> Server:
    server = create_server(owner_api)
    run_worker()  # the spec, and the install, on the agent
    server.refresh_from_db()
    assert server.status == "stopped", server.status_reason
    return server


def new_key(folder: Path) -> tuple[Path, str]:
    key = folder / f"key-{secrets.token_hex(3)}"
    subprocess.run(  # noqa: S603 - our own arguments
        [KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", "me@laptop", "-f", str(key)],
        check=True,
    )
    return key, key.with_suffix(".pub").read_text().strip()


def register_key(api, folder: Path) -> tuple[Path, dict]:
    """A new key pair, its public half added through the API; the key file and the answer."""
    key, public = new_key(folder)
    answer = api.post("/v1/profile/ssh-keys", {"public_key": public}, format="json")
    assert answer.status_code == 201, answer.content
    return key, answer.json()["data"]["ssh_key"]


def sftp(port: int, username: str, key: Path, commands: str, cwd: Path):
    batch = cwd / f"batch-{secrets.token_hex(3)}"
    batch.write_text(commands)
    return subprocess.run(  # noqa: S603 - our own arguments
        [
            SFTP,
            "-b",
            str(batch),
            "-i",
            str(key),
            "-P",
            str(port),
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "PasswordAuthentication=no",
            "-o",
            "BatchMode=yes",
            f"{username}@127.0.0.1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        check=False,
    )


def test_openssh_signs_in_with_a_key_from_the_api_until_it_is_deleted(
    sftp_node, server, owner, account, make_token, client_for, test_root
):
    _, port = sftp_node
    me = client_for(make_token(owner, account, ["profile:write"]))
    # Made before the agent reports anything: SQLite's shared in-memory database refuses a
    # write from the test while the live server writes a report.
    files = client_for(make_token(owner, account, ["files:read", "servers:read"]))
    key, registered = register_key(me, test_root)
    login = me.get("/v1/profile").json()["data"]["profile"]["sftp_login"]
    username = f"{login}.{server.id[4:12]}"

    # The Files tab says how to connect, from the agent's own GET /api/system.
    cache.clear()
    page = signed_in(owner).get(f"/servers/{server.id}/files").content.decode()
    assert f'<code id="sftp-command">sftp -P {port} {username}@127.0.0.1</code>' in page

    content = secrets.token_bytes(300_000)
    (test_root / "world.dat").write_bytes(content)
    done = sftp(
        port,
        username,
        key,
        "put world.dat\nget world.dat back.dat\nmkdir plugins\nrename world.dat plugins/w.dat\n"
        "ls plugins\n",
        test_root,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert (test_root / "back.dat").read_bytes() == content
    # The agent reported the upload; the control plane recorded it as the signed-in user's.
    event = wait_for(
        lambda: Event.objects.filter(type="server.files.uploaded", related_id=server.id).first(),
        what="the upload's event",
    )
    assert event.actor_user_id == owner.pk
    assert event.data["object"]["paths"] == ["/world.dat"]
    # The same file, seen through the files API.
    answer = files.get(f"/v1/servers/{server.id}/files?path=/plugins").json()["data"]["files"]
    assert [(entry["name"], entry["size"]) for entry in answer] == [("w.dat", len(content))]
    assert SshKey.objects.get(pk=registered["id"]).last_used_at is not None

    # A link is never made; the batch stops at the refused command.
    refused = sftp(port, username, key, "ln -s /etc/passwd passwd\n", test_root)
    assert refused.returncode != 0
    listing = files.get(f"/v1/servers/{server.id}/files?path=/").json()["data"]["files"]
    assert "passwd" not in [entry["name"] for entry in listing]

    done = sftp(port, username, key, "rm plugins/w.dat\nrmdir plugins\n", test_root)
    assert done.returncode == 0, done.stderr
    error = files.get(f"/v1/servers/{server.id}/files/stat?path=/plugins")
    assert error.status_code == 404

    # Deleted through the API: the very next sign-in is refused.
    assert me.delete(f"/v1/profile/ssh-keys/{registered['id']}").status_code == 200
    refused = sftp(port, username, key, "ls\n", test_root)
    assert refused.returncode != 0
    assert "Permission denied" in refused.stderr


def test_a_support_members_session_reads_but_may_not_write(
    sftp_node, server, owner, account, make_token, client_for, test_root
):
    _, port = sftp_node
    support = MembershipFactory(account=account, role=Role.SUPPORT).user
    api = client_for(make_token(support, account, ["profile:write"]))
    key, _ = register_key(api, test_root)
    login = api.get("/v1/profile").json()["data"]["profile"]["sftp_login"]
    username = f"{login}.{server.id[4:12]}"
    owner_files = client_for(make_token(owner, account, ["files:write", "servers:read"]))
    outsider_account_member = MembershipFactory(role=Role.OWNER).user
    outsider_api = client_for(
        make_token(
            outsider_account_member, outsider_account_member.accounts.get(), ["profile:write"]
        )
    )
    outsider_key, _ = register_key(outsider_api, test_root)
    outsider_login = outsider_api.get("/v1/profile").json()["data"]["profile"]["sftp_login"]
    written = owner_files.put(
        f"/v1/servers/{server.id}/files/contents",
        {"path": "/motd.txt", "content": "hello\n"},
        format="json",
    )
    assert written.status_code == 200, written.content

    done = sftp(port, username, key, "get motd.txt\n", test_root)
    assert done.returncode == 0, done.stderr
    assert (test_root / "motd.txt").read_text() == "hello\n"
    (test_root / "new.txt").write_text("nope\n")
    for command in ("put new.txt", "rm motd.txt", "rename motd.txt other.txt", "mkdir x"):
        refused = sftp(port, username, key, command + "\n", test_root)
        assert refused.returncode != 0, command
        assert "Permission denied" in refused.stdout + refused.stderr, command
    names = [
        entry["name"]
        for entry in owner_files.get(f"/v1/servers/{server.id}/files?path=/").json()["data"][
            "files"
        ]
    ]
    assert "motd.txt" in names and "new.txt" not in names and "x" not in names
    assert "other.txt" not in names

    # An outsider's own valid key does not open the account's server.
    refused = sftp(port, f"{outsider_login}.{server.id[4:12]}", outsider_key, "ls\n", test_root)
    assert refused.returncode != 0 and "Permission denied" in refused.stderr


def test_a_session_ends_within_its_recheck_when_its_key_is_deleted(
    sftp_node, server, owner, account, make_token, client_for, test_root
):
    _, port = sftp_node
    me = client_for(make_token(owner, account, ["profile:write"]))
    key, registered = register_key(me, test_root)
    login = me.get("/v1/profile").json()["data"]["profile"]["sftp_login"]
    transport = paramiko.Transport(("127.0.0.1", port))
    transport.connect(
        username=f"{login}.{server.id[4:12]}",
        pkey=paramiko.Ed25519Key.from_private_key_file(str(key)),
    )
    client = paramiko.SFTPClient.from_transport(transport)
    assert client is not None
    try:
        client.listdir("/")
        assert me.delete(f"/v1/profile/ssh-keys/{registered['id']}").status_code == 200
        # The agent asks again every second (AGENT_SFTP_RECHECK_SECONDS): the next no closes it.
        wait_for(lambda: not transport.is_active(), what="the session closed", timeout=15)
        with pytest.raises((OSError, EOFError, paramiko.SSHException)):
            client.listdir("/")
    finally:
        transport.close()
