"""The agent's pure parts, without processes: configuration, specs, exit reasons, archives."""

import io
import re
import tarfile
import zipfile
from pathlib import Path

import pytest

from agent.config import ConfigError, load_config
from agent.errors import ValidationFailed
from agent.process_tree import exit_reason
from agent.sources import SourceError, unpack
from agent.spec import parse_spec
from tests.agent.conftest import gameserver_spec

ENVIRONMENT = {"AGENT_TOKEN": "hmn_abc", "AGENT_NODE_ID": "node_1"}


def config(**environment: str):
    return load_config([], {**ENVIRONMENT, **environment}, is_root=False, which=lambda c: c)


def test_the_configuration_has_defaults():
    loaded = config()
    assert (loaded.listen_host, loaded.listen_port) == ("127.0.0.1", 8443)
    assert str(loaded.data_root) == "/var/lib/hms-agent"
    assert loaded.sample_seconds == 5
    assert loaded.batch_seconds == 15
    assert loaded.console_lines == 1000
    assert loaded.console_max_lines_per_second == 20000
    assert loaded.limits == "auto"
    assert loaded.run_as is None  # not root: AGENT_RUN_AS is ignored
    assert loaded.control_plane_url == ""


def test_flags_override_the_environment():
    loaded = load_config(
        ["--listen", "10.0.0.5:9000", "--sample-seconds", "0.5"],
        {**ENVIRONMENT, "AGENT_LISTEN": "127.0.0.1:1"},
        is_root=False,
    )
    assert (loaded.listen_host, loaded.listen_port, loaded.sample_seconds) == (
        "10.0.0.5",
        9000,
        0.5,
    )


def test_a_root_agent_runs_servers_as_nobody_by_default():
    loaded = load_config([], ENVIRONMENT, is_root=True)
    assert loaded.run_as is not None
    assert loaded.run_as.name == "nobody"
    assert load_config(
        [], {**ENVIRONMENT, "AGENT_RUN_AS": "1000:1000"}, is_root=True
    ).run_as.uid == (1000)


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("AGENT_TOKEN", "", "AGENT_TOKEN"),
        ("AGENT_TOKEN", "hms_not_a_node_token", "AGENT_TOKEN"),
        ("AGENT_NODE_ID", "", "AGENT_NODE_ID"),
        ("AGENT_LISTEN", "8443", "AGENT_LISTEN"),
        ("AGENT_SAMPLE_SECONDS", "0", "AGENT_SAMPLE_SECONDS"),
        ("AGENT_BATCH_SECONDS", "soon", "AGENT_BATCH_SECONDS"),
        ("AGENT_CONSOLE_LINES", "-1", "AGENT_CONSOLE_LINES"),
        ("AGENT_LIMITS", "docker", "AGENT_LIMITS"),
        ("AGENT_RUNTIMES", "[]", "AGENT_RUNTIMES"),
        ("AGENT_CONTROL_PLANE_URL", "ftp://x", "AGENT_CONTROL_PLANE_URL"),
        ("AGENT_TLS_CERT", "/nonexistent.pem", "AGENT_TLS_CERT"),
    ],
)
def test_a_bad_value_stops_the_agent_naming_the_variable(variable, value, message):
    with pytest.raises(ConfigError, match=message):
        load_config([], {**ENVIRONMENT, variable: value}, is_root=False)


def test_a_configured_runtime_must_exist():
    with pytest.raises(ConfigError, match="node-22"):
        load_config([], {**ENVIRONMENT, "AGENT_RUNTIMES": '{"node-22": "/no/node"}'}, is_root=False)


def test_values_are_substituted_shell_quoted():
    body = gameserver_spec("srv_1", 25565)
    body["variables"] = {"MOTD": "it's $(id); fine"}
    spec = parse_spec(body, server_id="srv_1")
    rendered = spec.render("say {{MOTD}} on {{SERVER_PORT}} {{ SERVER_IP }} {{UNKNOWN}}", "/w")
    assert rendered == "say 'it'\"'\"'s $(id); fine' on 25565 127.0.0.1 {{UNKNOWN}}"


def test_the_stored_spec_keeps_the_names_of_secrets_not_their_values():
    body = gameserver_spec("srv_1", 1)
    body["environment"] = {"DISCORD_TOKEN": "very-secret"}
    public = parse_spec(body, server_id="srv_1").public()
    assert public["environment_keys"] == ["DISCORD_TOKEN"]
    assert "very-secret" not in str(public)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"kind": "vm"}, "kind"),
        ({"limits": {"memory_mb": -1}}, "limits.memory_mb"),
        ({"allocation": {"ip": "localhost", "port": 1}}, "allocation.ip"),
        ({"variables": {"BAD NAME": "x"}}, "variables"),
        ({"source": {"type": "git", "url": "ext::sh -c id"}}, "source.url"),
        (
            {"source": {"type": "git", "url": "https://x/y", "ref": "--upload-pack=id"}},
            "source.ref",
        ),
    ],
)
def test_a_bad_spec_names_its_field(change, field):
    with pytest.raises(ValidationFailed, match=f"^{re.escape(field)}"):
        parse_spec({**gameserver_spec("srv_1", 1), **change}, server_id="srv_1")


def test_a_bad_template_names_its_field():
    body = gameserver_spec("srv_1", 1)
    body["template"]["stop_signal"] = "SIGSEGV"
    with pytest.raises(ValidationFailed, match=r"^template\.stop_signal"):
        parse_spec(body, server_id="srv_1")
    with pytest.raises(ValidationFailed, match=r"^id:"):
        parse_spec(gameserver_spec("../etc", 1), server_id="../etc")


@pytest.mark.parametrize(
    ("code", "out_of_memory", "reason"),
    [
        (1, False, "exited with code 1"),
        (-9, False, "killed by signal 9"),
        (137, False, "killed by signal 9"),  # /bin/sh reporting its child
        (-9, True, "killed: out of memory (limit 256 MB)"),
        (
            None,
            False,
            "exited (exit status unknown: the process was adopted after an agent restart)",
        ),
    ],
)
def test_exit_reasons(code, out_of_memory, reason):
    assert exit_reason(code, out_of_memory=out_of_memory, memory_mb=256) == reason


def test_a_tarball_with_a_link_out_of_its_folder_is_refused(tmp_path: Path):
    content = io.BytesIO()
    with tarfile.open(fileobj=content, mode="w:gz") as archive:
        link = tarfile.TarInfo("config")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/shadow"
        archive.addfile(link)
    (tmp_path / "code.tar.gz").write_bytes(content.getvalue())
    (tmp_path / "staging").mkdir()
    with pytest.raises(SourceError, match="refused"):
        unpack(tmp_path / "code.tar.gz", tmp_path / "staging", max_bytes=1024, max_members=100)
    assert not (tmp_path / "staging" / "config").is_symlink()


def test_an_archive_bigger_than_the_disk_limit_is_refused(tmp_path: Path):
    content = io.BytesIO()
    with tarfile.open(fileobj=content, mode="w:gz") as archive:
        info = tarfile.TarInfo("big.bin")
        info.size = 2048
        archive.addfile(info, io.BytesIO(b"\0" * 2048))
    (tmp_path / "code.tar.gz").write_bytes(content.getvalue())
    (tmp_path / "staging").mkdir()
    with pytest.raises(SourceError, match="more than the disk limit"):
        unpack(tmp_path / "code.tar.gz", tmp_path / "staging", max_bytes=1024, max_members=100)


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_an_archive_of_too_many_members_is_refused(tmp_path: Path, kind: str):
    content = io.BytesIO()
    if kind == "tar":
        with tarfile.open(fileobj=content, mode="w:gz") as archive:
            for index in range(101):
                archive.addfile(tarfile.TarInfo(f"file-{index}"), io.BytesIO(b""))
    else:
        with zipfile.ZipFile(content, "w") as archive:
            for index in range(101):
                archive.writestr(f"file-{index}", b"")
    (tmp_path / "code").write_bytes(content.getvalue())
    (tmp_path / "staging").mkdir()
    with pytest.raises(SourceError, match="more than 100 files and folders"):
        unpack(tmp_path / "code", tmp_path / "staging", max_bytes=1024, max_members=100)
    assert not any((tmp_path / "staging").iterdir())


def test_runtimes_are_found_by_the_version_their_interpreter_reports(tmp_path):
    from agent.config import detect_runtimes

    def fake(name: str, output: str) -> str:
        path = tmp_path / name
        path.write_text(f"#!/bin/sh\necho '{output}'\n")
        path.chmod(0o755)
        return str(path)

    found = {
        "node": fake("node", "v20.19.2"),
        "python3.13": fake("python3.13", "Python 3.13.1"),
        "python3.12": fake("python3.12", "Python 3.11.2"),  # a misnamed interpreter
    }
    runtimes = detect_runtimes(found.get)
    assert runtimes == {"node-20": found["node"], "python-3.13": found["python3.13"]}


def test_the_console_loses_no_line_while_it_gives_back_disk_space(tmp_path, monkeypatch):
    """A process writing steadily past the log's size limit: every line arrives, in order,
    and the file's blocks stay bounded (the part already read is punched out, not truncated
    under the writer's feet)."""
    import asyncio
    import os
    import subprocess
    import sys

    from agent import console as console_module
    from tests.agent.aio import run as run_async

    monkeypatch.setattr(console_module, "MAX_LOG_BYTES", 64 * 1024)
    total = 200_000
    writer_code = (
        "import sys\n"
        f"for n in range({total}):\n"
        "    sys.stdout.write(f'line {n:06d} ' + 'x' * 20 + '\\n')\n"
        "    sys.stdout.flush() if n % 500 == 0 else None\n"
    )

    async def run() -> tuple[list[str], int]:
        dir_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
        inotify = console_module.Inotify(asyncio.get_running_loop())
        console = console_module.Console(dir_fd, keep_lines=10, inotify=inotify)
        received: list[str] = []
        console.add_listener(received.extend)
        output = console.output_fd()
        writer = subprocess.Popen([sys.executable, "-c", writer_code], stdout=output)  # noqa: S603
        os.close(output)
        deadline = asyncio.get_running_loop().time() + 60
        while len(received) < total and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
            console.poll()  # as inotify would; harmless when there is nothing new
        writer.wait(timeout=10)
        blocks = os.stat(tmp_path / ".console.log").st_blocks * 512
        return received, blocks

    received, disk_bytes = run_async(run(), timeout=120)
    assert len(received) == total
    assert received[0].startswith("line 000000") and received[-1].startswith(f"line {total - 1}")
    assert all(line.startswith(f"line {n:06d}") for n, line in enumerate(received))
    assert disk_bytes < 2 * 1024 * 1024  # 6 MB were written; only the unread tail is kept
