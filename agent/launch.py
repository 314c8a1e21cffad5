"""The launcher: ``python -m agent.launch <fd>``, started by the agent for every process it runs.

It reads its instructions (JSON) from the inherited file descriptor ``fd``, never from argv or
its environment: argv is readable by every user in /proc, and the launcher's own environment is
empty so that nothing a customer puts in a variable (LD_PRELOAD, PYTHONPATH) acts on this
root-owned process. Then, in this order, it joins the server's cgroups, applies rlimits, becomes
the leader of a new session (the server's process group), drops privileges to the unprivileged
user, enters the server's directory and replaces itself with the command. The agent therefore
never runs code between fork and exec (no ``preexec_fn`` in an asyncio process).
"""

import json
import os
import resource
import sys


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
    uid, gid = instructions.get("uid"), instructions.get("gid")
    if uid is not None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        if os.geteuid() != uid or os.getegid() != gid:
            _fail("privileges were not dropped")
    os.chdir(instructions["cwd"])
    os.umask(0o027)
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
