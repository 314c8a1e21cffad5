"""A game-like server for trying the agent: a TCP port, a ready line, console commands.

    python3 gameserver.py --port 25565 [--host 127.0.0.1] [--ready-delay 2]

TCP, one line per request: ``ping`` → ``pong``, ``players`` → the number of connections.
Console (standard input): ``say <text>``, ``list``, ``stop``, ``crash`` (exit code 3),
``leak <MB>`` (allocates and holds memory), ``spam <n>`` (n numbered lines, as fast as
possible), ``write <MB>`` (a file of that size in the working directory). Standard library only.

Game queries (agent/query.py): ``--query minecraft`` makes the TCP port also answer Minecraft's
Server List Ping (told from a line by its first byte, a packet length below 0x20);
``--query source`` answers Valve's A2S_INFO on the same port number in UDP, ``--query bedrock``
Minecraft Bedrock's RakNet unconnected ping there. Each says the
players (connections plus ``players <n>`` typed in the console), ``--max-players``, the
version and ``--motd``. ``freeze`` makes it stop answering queries (the process runs on),
``thaw`` answer again.
"""

import argparse
import contextlib
import json
import os
import signal
import socket
import socketserver
import struct
import sys
import threading
import time

MB = 1024 * 1024
VERSION = "1.21.4"
held_memory: list[bytearray] = []
players = 0
simulated_players = 0
players_lock = threading.Lock()
frozen = threading.Event()
settings = {"max_players": 20, "motd": "A gameserver.py world"}


def say(text: str) -> None:
    print(text, flush=True)


def online() -> int:
    with players_lock:
        return players + simulated_players


def read_varint(stream) -> int:
    value = 0
    for shift in range(0, 35, 7):
        byte = stream.read(1)
        if not byte:
            raise EOFError
        value |= (byte[0] & 0x7F) << shift
        if not byte[0] & 0x80:
            return value
    raise ValueError("VarInt too long")


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def packet(payload: bytes) -> bytes:
    return varint(len(payload)) + payload


def server_list_ping(stream, out) -> None:
    """Minecraft Java's status exchange: handshake, status request → JSON, ping → pong."""
    length = read_varint(stream)
    stream.read(length)  # the handshake: protocol, address, port, next state (1: status)
    while True:
        length = read_varint(stream)
        body = stream.read(length)
        if frozen.is_set():
            return
        if body[:1] == b"\x00":
            status = {
                "version": {"name": VERSION, "protocol": 769},
                "players": {"online": online(), "max": settings["max_players"]},
                "description": {"text": settings["motd"]},
            }
            text = json.dumps(status).encode()
            out.write(packet(b"\x00" + varint(len(text)) + text))
        elif body[:1] == b"\x01":
            out.write(packet(body))  # pong: the same 8 bytes
            return
        out.flush()


def source_info(port: int) -> bytes:
    """A2S_INFO's answer (https://developer.valvesoftware.com/wiki/Server_queries)."""

    def text(value: str) -> bytes:
        return value.encode() + b"\x00"

    return (
        b"\xff\xff\xff\xffI\x11"
        + text(settings["motd"])
        + text("de_dust2")
        + text("gameserver")
        + text("gameserver.py")
        + struct.pack("<H", 0)
        + bytes([min(online(), 255), min(settings["max_players"], 255), 0])
        + b"dl\x00\x00"
        + text(VERSION)
        + b"\x80"
        + struct.pack("<H", port)
    )


def serve_a2s(host: str, port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((host, port))
    while True:
        data, sender = sock.recvfrom(1400)
        if not frozen.is_set() and data.startswith(b"\xff\xff\xff\xffTSource Engine Query"):
            sock.sendto(source_info(port), sender)


RAKNET_MAGIC = bytes.fromhex("00ffff00fefefefefdfdfdfd12345678")
SERVER_GUID = 0x1234567890ABCDEF


def bedrock_pong(ping: bytes, port: int) -> bytes | None:
    """The unconnected pong to a RakNet unconnected ping (https://minecraft.wiki/w/RakNet):
    the ping's time, our GUID, the magic, and the status string Bedrock servers give."""
    if len(ping) < 33 or ping[0] != 0x01 or ping[9:25] != RAKNET_MAGIC:
        return None
    status = ";".join(
        [
            "MCPE",
            settings["motd"],
            "766",
            VERSION,
            str(online()),
            str(settings["max_players"]),
            str(SERVER_GUID),
            "gameserver.py",
            "Survival",
            "1",
            str(port),
            str(port + 1),
            "",
        ]
    ).encode()
    return (
        b"\x1c"
        + ping[1:9]
        + struct.pack(">Q", SERVER_GUID)
        + RAKNET_MAGIC
        + struct.pack(">H", len(status))
        + status
    )


def serve_bedrock(host: str, port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((host, port))
    while True:
        data, sender = sock.recvfrom(1500)
        pong = None if frozen.is_set() else bedrock_pong(data, port)
        if pong is not None:
            sock.sendto(pong, sender)


class Player(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        global players
        if self.server.query == "minecraft":
            first = self.rfile.peek(1)[:1]
            if first and first[0] < 0x20:
                with contextlib.suppress(EOFError, ValueError, OSError):
                    server_list_ping(self.rfile, self.wfile)
                return
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
    query = ""


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
    elif command == "players" and argument.strip().isdigit():
        global simulated_players
        with players_lock:
            simulated_players = int(argument)
        say(f"There are {online()} players online")
    elif command == "freeze":
        frozen.set()
        say("Not answering queries")
    elif command == "thaw":
        frozen.clear()
        say("Answering queries")
    elif command in ("leak", "spam", "write") and argument.strip().isdigit():
        {"leak": leak, "spam": spam, "write": write}[command](int(argument))
    else:
        say(f"Unknown command: {line.strip()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="0.0.0.0")  # noqa: S104 - a game server listens
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ready-delay", type=float, default=0.0)
    parser.add_argument("--query", choices=("minecraft", "source", "bedrock"), default="")
    parser.add_argument("--max-players", type=int, default=20)
    parser.add_argument("--motd", default=settings["motd"])
    args = parser.parse_args()
    settings.update(max_players=args.max_players, motd=args.motd)

    def terminate(number, frame):
        say(f"Stopping server ({signal.Signals(number).name})")
        os._exit(0)

    signal.signal(signal.SIGTERM, terminate)
    say("Loading world…")
    server = Server((args.host, args.port), Player)
    server.query = args.query
    time.sleep(args.ready_delay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    if args.query in ("source", "bedrock"):
        serve = serve_a2s if args.query == "source" else serve_bedrock
        threading.Thread(target=serve, args=(args.host, args.port), daemon=True).start()
    say(f"Server ready on {args.host}:{args.port}")
    for line in sys.stdin:
        run_command(line)
    threading.Event().wait()  # no console (stdin closed): go on serving


if __name__ == "__main__":
    main()
