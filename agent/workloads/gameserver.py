"""A game-like server for trying the agent: a TCP port, a ready line, console commands.

    python3 gameserver.py --port 25565 [--host 127.0.0.1] [--ready-delay 2]

TCP, one line per request: ``ping`` → ``pong``, ``players`` → the number of connections.
Console (standard input): ``say <text>``, ``list``, ``stop``, ``crash`` (exit code 3),
``leak <MB>`` (allocates and holds memory), ``spam <n>`` (n numbered lines, as fast as
possible), ``write <MB>`` (a file of that size in the working directory). Standard library only.
"""

import argparse
import os
import signal
import socketserver
import sys
import threading
import time

MB = 1024 * 1024
held_memory: list[bytearray] = []
players = 0
players_lock = threading.Lock()


def say(text: str) -> None:
    print(text, flush=True)


class Player(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        global players
        with players_lock:
            players += 1
        try:
            for raw in self.rfile:
                request = raw.decode(errors="replace").strip()
                if request == "ping":
                    answer = "pong"
                elif request == "players":
                    answer = str(players)
                elif request == "quit":
                    return
                else:
                    answer = f"unknown request: {request}"
                self.wfile.write(f"{answer}\n".encode())
        finally:
            with players_lock:
                players -= 1


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def leak(megabytes: int) -> None:
    for _ in range(megabytes):
        held_memory.append(bytearray(b"\x01") * MB)  # written, so every page is really used
    say(f"Leaked {megabytes} MB (holding {len(held_memory)} MB)")


def spam(count: int) -> None:
    batch = 2000
    for start in range(0, count, batch):
        sys.stdout.write(
            "".join(f"spam line {i}\n" for i in range(start, min(count, start + batch)))
        )
    sys.stdout.flush()
    say(f"Spammed {count} lines")


def write(megabytes: int) -> None:
    name = f"written-{time.time_ns()}.bin"
    chunk = b"\xab" * MB
    with open(name, "wb") as file:
        for _ in range(megabytes):
            file.write(chunk)
        file.flush()
        os.fsync(file.fileno())
    say(f"Wrote {megabytes} MB to {name}")


def run_command(line: str) -> None:
    command, _, argument = line.strip().partition(" ")
    if not command:
        return
    if command == "say":
        say(f"[Server] {argument}")
    elif command == "list":
        say(f"There are {players} players online")
    elif command == "stop":
        say("Stopping server")
        sys.stdout.flush()
        time.sleep(0.1)
        os._exit(0)
    elif command == "crash":
        say("Crashing!")
        os._exit(3)
    elif command in ("leak", "spam", "write") and argument.strip().isdigit():
        {"leak": leak, "spam": spam, "write": write}[command](int(argument))
    else:
        say(f"Unknown command: {line.strip()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="0.0.0.0")  # noqa: S104 - a game server listens
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ready-delay", type=float, default=0.0)
    args = parser.parse_args()

    def terminate(number, frame):
        say(f"Stopping server ({signal.Signals(number).name})")
        os._exit(0)

    signal.signal(signal.SIGTERM, terminate)
    say("Loading world…")
    server = Server((args.host, args.port), Player)
    time.sleep(args.ready_delay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    say(f"Server ready on {args.host}:{args.port}")
    for line in sys.stdin:
        run_command(line)
    threading.Event().wait()  # no console (stdin closed): go on serving


if __name__ == "__main__":
    main()
