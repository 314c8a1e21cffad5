"""The agent's SFTP server (agent/sftp.py) on a real agent, with OpenSSH's ``sftp`` client and
paramiko: sign-in asked of the (fake) control plane every time, the session confined to its
server's folder as its user, quota and read-only sessions held, a revoked key refused at the
next sign-in and a session closed when the re-check turns to no."""

import os
import secrets
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import paramiko
import pytest

from agent.sources import RESERVED_NAMES
from tests.agent.conftest import AgentPool, gameserver_spec, wait_until
from tests.agent.harness import Agent, free_port, stop_agent

SFTP = "/usr/bin/sftp"


@dataclass
class SftpAgent:
    agent: Agent
    port: int


@dataclass
class Site:
    """A server on the SFTP agent, and a key its user may sign in with."""

    id: str
    folder: Path
    username: str
    key: Path
    public_key: str


@pytest.fixture(scope="module")
def sftp_agent(control_plane, work_root) -> Iterator[SftpAgent]:
    pool = AgentPool(control_plane, work_root / f"sftp-{secrets.token_hex(3)}")
    port = free_port()
    agent = pool.start(AGENT_SFTP_LISTEN=f"127.0.0.1:{port}", AGENT_SFTP_RECHECK_SECONDS="0.5")
    yield SftpAgent(agent, port)
    pool.close()


def new_key(folder: Path) -> tuple[Path, str]:
    key = folder / f"key-{secrets.token_hex(3)}"
    subprocess.run(  # noqa: S603 - our own arguments
        ["/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
        check=True,
    )
    return key, key.with_suffix(".pub").read_text().strip()


@pytest.fixture
def make_site(sftp_agent, control_plane, test_root) -> Iterator[Callable[..., Site]]:
    made: list[str] = []

    def make(
        install_script: str = "",
        *,
        disk_mb: int = 200,
        permissions: tuple[str, ...] = ("files.read", "files.write"),
        server_id: str | None = None,
    ) -> Site:
        server_id = server_id or f"srv_{secrets.token_hex(6)}"
        spec = gameserver_spec(server_id, free_port(), install_script=install_script)
        spec["limits"]["disk_mb"] = disk_mb
        with sftp_agent.agent.api() as api:
            assert api.put(f"/api/servers/{server_id}", json=spec).status_code == 201
            made.append(server_id)
            installed = api.post(f"/api/servers/{server_id}/install")
            assert installed.status_code == 200, installed.text
        key, public_key = new_key(test_root)
        username = f"alice.{server_id[4:12]}"
        control_plane.sftp_allow("alice", server_id, public_key, permissions=permissions)
        folder = sftp_agent.agent.data_root / "servers" / server_id
        return Site(server_id, folder, username, key, public_key)

    yield make
    with sftp_agent.agent.api() as api:
        for server_id in made:
            api.delete(f"/api/servers/{server_id}")


def openssh(sftp_agent: SftpAgent, site: Site, commands: str, cwd: Path):
    batch = cwd / f"batch-{secrets.token_hex(3)}"
    batch.write_text(commands)
    return subprocess.run(  # noqa: S603 - our own arguments
        [
            SFTP,
            "-b",
            str(batch),
            "-i",
            str(site.key),
            "-P",
            str(sftp_agent.port),
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "PasswordAuthentication=no",
            f"{site.username}@127.0.0.1",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=cwd,
        check=False,
    )


def paramiko_sftp(
    sftp_agent: SftpAgent,
    username: str,
    *,
    key: Path | None = None,
    password: str | None = None,
) -> paramiko.SFTPClient:
    transport = paramiko.Transport(("127.0.0.1", sftp_agent.port))
    try:
        transport.connect(
            username=username,
            pkey=paramiko.Ed25519Key.from_private_key_file(str(key)) if key else None,
            password=password,
        )
    except BaseException:
        transport.close()
        raise
    client = paramiko.SFTPClient.from_transport(transport)
    assert client is not None
    return client


def names(folder: Path) -> list[str]:
    """What the server's folder holds, but for the agent's console files."""
    return sorted(set(os.listdir(folder)) - RESERVED_NAMES)


def uploads_of(control_plane, server_id: str) -> list[dict]:
    return [
        event for event in control_plane.events_of(server_id) if event["type"] == "files_uploaded"
    ]


# -- OpenSSH's sftp -----------------------------------------------------------------------------


def test_a_file_goes_up_comes_back_identical_is_renamed_and_deleted(
    sftp_agent, make_site, control_plane, test_root
):
    site = make_site()
    content = secrets.token_bytes(700_000)
    (test_root / "world.dat").write_bytes(content)
    done = openssh(
        sftp_agent,
        site,
        "put world.dat\nget world.dat back.dat\nmkdir plugins\nrename world.dat plugins/w.dat\n"
        "rmdir plugins/nothing\n",
        test_root,
    )
    # The last command fails (no such folder) and stops the batch: everything before it ran.
    assert done.returncode != 0
    assert "put world.dat" in done.stdout, done.stderr
    assert (test_root / "back.dat").read_bytes() == content
    assert (site.folder / "plugins" / "w.dat").read_bytes() == content
    assert not (site.folder / "world.dat").exists()
    uploaded = control_plane.wait_for(lambda: uploads_of(control_plane, site.id))
    assert [(e["path"], e["size"], e["user"]) for e in uploaded] == [
        ("/world.dat", len(content), "usr_SftpUser")
    ]
    # No partial file is left beside it.
    assert sorted(os.listdir(site.folder / "plugins")) == ["w.dat"]

    done = openssh(sftp_agent, site, "rm plugins/w.dat\nrmdir plugins\nls -la\n", test_root)
    assert done.returncode == 0, done.stderr
    assert not (site.folder / "plugins").exists()


def test_links_cannot_be_made_nor_followed_out_and_cd_stays_in_the_folder(
    sftp_agent, make_site, test_root
):
    site = make_site("echo hi > mine.txt; ln -s /etc/passwd passwd-link; ln -s .. up")
    for command in ("ln -s /etc/passwd x", "ln -s ../../other y", "ln mine.txt hard"):
        done = openssh(sftp_agent, site, command + "\n", test_root)
        assert done.returncode != 0, command
    assert names(site.folder) == ["mine.txt", "passwd-link", "up"]

    for command in ("get passwd-link stolen", "get up/up/etc/passwd stolen"):
        done = openssh(sftp_agent, site, command + "\n", test_root)
        assert done.returncode != 0, command
        assert not (test_root / "stolen").exists()
    # "up" leads to the folder of every server: the client is shown none of it.
    done = openssh(sftp_agent, site, "ls up/\nls -l up/up/etc\n", test_root)
    assert site.id not in done.stdout
    assert "passwd" not in done.stdout.replace("passwd-link", "")

    done = openssh(sftp_agent, site, "cd ..\ncd ../..\npwd\nget mine.txt\n", test_root)
    assert done.returncode == 0, done.stderr
    assert "Remote working directory: /\n" in done.stdout
    assert (test_root / "mine.txt").read_text() == "hi\n"
    # A link is shown as a link, with its target as stored.
    with paramiko_sftp(sftp_agent, site.username, key=site.key) as client:
        assert client.readlink("passwd-link") == "/etc/passwd"
        assert stat.S_ISLNK(client.lstat("/up").st_mode)
        with pytest.raises(PermissionError):
            client.stat("passwd-link")


# -- paramiko -----------------------------------------------------------------------------------


def test_a_password_signs_in_and_the_files_belong_to_the_servers_user(
    sftp_agent, make_site, control_plane
):
    site = make_site()
    control_plane.sftp_allow("alice", site.id, "correct horse battery")
    with paramiko_sftp(sftp_agent, site.username, password="correct horse battery") as client:
        with client.open("/notes.txt", "w") as file:
            file.write(b"hello")
        client.chmod("/notes.txt", 0o4640)
        assert set(client.listdir("/")) - RESERVED_NAMES == {"notes.txt"}
        assert stat.S_IMODE(client.stat("notes.txt").st_mode) == 0o640
    info = (site.folder / "notes.txt").stat()
    assert info.st_uid == site.folder.stat().st_uid
    with pytest.raises(paramiko.AuthenticationException):
        paramiko_sftp(sftp_agent, site.username, password="wrong")


def test_a_read_only_session_reads_and_changes_nothing(sftp_agent, make_site):
    site = make_site("echo hi > mine.txt; mkdir keep", permissions=("files.read",))
    with paramiko_sftp(sftp_agent, site.username, key=site.key) as client:
        with client.open("mine.txt") as file:
            assert file.read() == b"hi\n"
        attempts = [
            lambda: client.open("new.txt", "w"),
            lambda: client.open("mine.txt", "a"),
            lambda: client.mkdir("more"),
            lambda: client.rmdir("keep"),
            lambda: client.remove("mine.txt"),
            lambda: client.rename("mine.txt", "yours.txt"),
            lambda: client.chmod("mine.txt", 0o600),
        ]
        for attempt in attempts:
            with pytest.raises(PermissionError):
                attempt()
    assert names(site.folder) == ["keep", "mine.txt"]
    assert (site.folder / "mine.txt").read_text() == "hi\n"


def test_an_upload_past_the_disk_limit_fails_and_leaves_nothing(
    sftp_agent, make_site, control_plane
):
    site = make_site("echo old > big.dat", disk_mb=1)
    with (
        paramiko_sftp(sftp_agent, site.username, key=site.key) as client,
        pytest.raises(OSError, match="quota exceeded"),
        client.open("big.dat", "w") as file,
    ):
        file.write(b"x" * (2 * 1024 * 1024))
    assert (site.folder / "big.dat").read_text() == "old\n"
    assert names(site.folder) == ["big.dat"]
    time.sleep(0.5)
    assert uploads_of(control_plane, site.id) == []


def test_an_upload_cut_short_leaves_the_target_alone(sftp_agent, make_site, control_plane):
    site = make_site()
    client = paramiko_sftp(sftp_agent, site.username, key=site.key)
    file = client.open("half.dat", "w")
    file.write(b"y" * 100_000)
    file.flush()
    client.get_channel().get_transport().close()
    wait_until(lambda: names(site.folder) == [], 5, lambda: names(site.folder))
    time.sleep(0.5)
    assert uploads_of(control_plane, site.id) == []


def test_a_revoked_key_is_refused_at_the_next_sign_in(sftp_agent, make_site, control_plane):
    site = make_site()
    with paramiko_sftp(sftp_agent, site.username, key=site.key) as client:
        assert set(client.listdir("/")) <= RESERVED_NAMES
    control_plane.sftp_revoke("alice", site.id, site.public_key)
    with pytest.raises(paramiko.AuthenticationException):
        paramiko_sftp(sftp_agent, site.username, key=site.key)


def test_a_session_is_closed_when_the_recheck_says_no(sftp_agent, make_site, control_plane):
    site = make_site()
    client = paramiko_sftp(sftp_agent, site.username, key=site.key)
    transport = client.get_channel().get_transport()
    try:
        assert set(client.listdir("/")) <= RESERVED_NAMES
        time.sleep(1.2)  # two re-checks said yes
        assert transport.is_active()
        control_plane.sftp_revoke("alice", site.id, site.public_key)
        wait_until(lambda: not transport.is_active(), 5)
    finally:
        client.close()
        transport.close()


def test_an_unknown_or_ambiguous_server_is_refused_without_asking(
    sftp_agent, make_site, control_plane
):
    shared = secrets.token_hex(4)
    first = make_site(server_id=f"srv_{shared}aaaa")
    make_site(server_id=f"bot_{shared}bbbb")
    for username in (f"alice.{shared}", "alice.00000000", "alice", "alice.short"):
        with pytest.raises(paramiko.AuthenticationException):
            paramiko_sftp(sftp_agent, username, key=first.key)
    asked = [ask for ask in control_plane.sftp_asks if ask["server_id"] == first.id]
    assert asked == []


def test_a_control_plane_that_cannot_answer_refuses_the_sign_in(
    sftp_agent, make_site, control_plane
):
    site = make_site()
    control_plane.sftp_down = True
    try:
        with pytest.raises(paramiko.AuthenticationException):
            paramiko_sftp(sftp_agent, site.username, key=site.key)
    finally:
        control_plane.sftp_down = False
    with paramiko_sftp(sftp_agent, site.username, key=site.key) as client:
        assert set(client.listdir("/")) <= RESERVED_NAMES


def test_the_host_key_is_kept_private_and_shown_in_system(sftp_agent, make_site):
    site = make_site()
    key_file = sftp_agent.agent.data_root / "sftp_host_ed25519_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    with sftp_agent.agent.api() as api:
        shown = api.get("/api/system").json()["sftp"]
    client = paramiko_sftp(sftp_agent, site.username, key=site.key)
    try:
        seen = client.get_channel().get_transport().get_remote_server_key()
    finally:
        client.close()
    assert shown["listen"] == f"127.0.0.1:{sftp_agent.port}"
    assert shown["host_key_fingerprint"] == seen.fingerprint


def test_the_host_key_survives_a_restart(agents, test_root):
    def fingerprint_after_start() -> str:
        agent = agents.start(
            data_root=test_root / "node", AGENT_SFTP_LISTEN=f"127.0.0.1:{free_port()}"
        )
        with agent.api() as api:
            shown = api.get("/api/system").json()["sftp"]["host_key_fingerprint"]
        stop_agent(agent)
        return shown

    first = fingerprint_after_start()
    assert first.startswith("SHA256:")
    assert fingerprint_after_start() == first
