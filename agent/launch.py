"""The launcher: ``python -m agent.launch <fd>``, started by the agent for every process it runs.

It reads its instructions (JSON) from the inherited file descriptor ``fd``, never from argv or
its environment: argv is readable by every user in /proc, and the launcher's own environment is
empty so that nothing a customer puts in a variable (LD_PRELOAD, PYTHONPATH) acts on this
root-owned process. Then, in this order, it joins the server's cgroups, applies rlimits, becomes
the leader of a new session (the server's process group), drops privileges to the server's own
user, enters the server's directory and replaces itself with the command — in a sandbox, the
sandbox's outer tool, which gets bubblewrap's arguments (the environment, secrets included) as
its file descriptor 3, a memory file. The agent therefore never runs code between fork and exec
(no ``preexec_fn`` in an asyncio process).
"""

import json
import os
import resource
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

PACKAGE_PARENT = Path(__file__).resolve().parent.parent
SANDBOX_ARGS_FD = 3


@dataclass
class Instructions:
    argv: list[str]
    env: dict[str, str]
    cwd: str
    uid: int | None = None
    gid: int | None = None
    cgroup_procs: list[str] = field(default_factory=list)
    rlimits: dict[str, int] = field(default_factory=dict)
    sandbox_args: bytes | None = None  # NUL-separated, for ``bwrap --args 3``

    def encode(self) -> bytes:
        data = asdict(self)
        if self.sandbox_args is not None:
            data["sandbox_args"] = self.sandbox_args.decode("utf-8", "surrogateescape")
        return json.dumps(data).encode()


def _memory_file(name: str, data: bytes) -> int:
    fd = os.memfd_create(name)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def spawn(instructions: Instructions, **popen) -> subprocess.Popen:
    """Start the launcher with ``instructions`` in an inherited memory file (not in argv, which
    is world-readable, nor in its environment)."""
    memfd = _memory_file("agent-launch", instructions.encode())
    try:
        return subprocess.Popen(  # noqa: S603 - our own launcher, no shell
            [sys.executable, "-E", "-s", "-m", "agent.launch", str(memfd)],
            pass_fds=(memfd,),
            cwd=PACKAGE_PARENT,
            env={},
            **popen,
        )
    finally:
        os.close(memfd)


def run(instructions: Instructions, *, timeout: float) -> subprocess.CompletedProcess:
    """Launch and wait; standard output and error together, as text."""
    with spawn(
        instructions,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as process:
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
        return subprocess.CompletedProcess(process.args, process.returncode, output)


def _fail(message: str) -> None:
    # Standard error is the server's console log: the customer sees why nothing started.
    print(f"[agent] cannot start the process: {message}", file=sys.stderr, flush=True)
    os._exit(127)


def launch(instructions: dict) -> None:
    for path in instructions["cgroup_procs"]:
        with open(path, "w") as procs:
            procs.write(str(os.getpid()))
    for name, value in instructions["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (value, value))
    os.setsid()
    sandbox_args = instructions.get("sandbox_args")
    if sandbox_args is not None:
        fd = _memory_file("agent-sandbox", sandbox_args.encode("utf-8", "surrogateescape"))
        if fd != SANDBOX_ARGS_FD:
            os.dup2(fd, SANDBOX_ARGS_FD)
            os.close(fd)
        os.set_inheritable(SANDBOX_ARGS_FD, True)
    uid, gid = instructions.get("uid"), instructions.get("gid")
    if uid is not None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        if os.geteuid() != uid or os.getegid() != gid or os.getgroups():
            _fail("privileges were not dropped")
    os.chdir(instructions["cwd"])
    os.umask(0o027)
    # Python ignores SIGPIPE and SIGXFSZ; the command starts with the defaults (pasta even
    # refuses to start when it finds SIGPIPE already ignored).
    for number in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(number, signal.SIG_DFL)
    argv = instructions["argv"]
    os.execve(argv[0], argv, instructions["env"])  # noqa: S606 - the point of the launcher


def main() -> None:
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        _fail("usage: python -m agent.launch <fd>")
    try:
        with os.fdopen(int(sys.argv[1]), "rb") as file:
            instructions = json.loads(file.read())
        launch(instructions)
    except (OSError, ValueError, KeyError, TypeError) as error:
        _fail(str(error))


if __name__ == "__main__":
    main()
