"""Game query: each running server whose template names a ``query`` is asked, in its game's own
protocol, how it is doing, every AGENT_QUERY_INTERVAL_SECONDS.

- ``minecraft``: Minecraft Java's Server List Ping, through mcstatus.
- ``source``: Valve's A2S_INFO (Source and GoldSource games, most Steam dedicated servers),
  through python-a2s.
- ``bedrock``: Minecraft Bedrock's RakNet unconnected ping (UDP), through mcstatus.

The answer (players online, max players, version, MOTD or server name) goes into the server's
next usage samples. A running server (past its ready pattern) that fails NOT_RESPONDING_AFTER
queries in a row while its process runs is *not responding*: the
samples say so (``responding: false``), its watchers hear it, and its ``on_not_responding``
callback (the crash policy, when the server's setting asks for it) is called once per spell.

Queries go to 127.0.0.1 (or the allocation's own address when it is not a wildcard): the agent
runs on the node the server listens on. At most AGENT_QUERY_CONCURRENCY queries are in flight, each
bounded by AGENT_QUERY_TIMEOUT_SECONDS, so a silent server costs one timeout, never the loop.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

PROTOCOLS = ("minecraft", "source", "bedrock")
# Consecutive failed queries of a running server before it counts as not responding: with the
# 15 s default interval, about 45 s of silence (a garbage collection pause or a world save of a
# few seconds does not count).
NOT_RESPONDING_AFTER = 3
MOTD_CHARS = 200
VERSION_CHARS = 100


@dataclass
class QueryResult:
    players: int
    max_players: int
    version: str
    motd: str


@dataclass
class QueryState:
    result: QueryResult | None = None
    failures: int = 0
    answered_once: bool = False
    not_responding: bool = False
    at: float = 0.0
    pid: int | None = None


def _mcstatus_result(status: Any) -> QueryResult:
    """What mcstatus answers for either edition (Java's ping, Bedrock's RakNet ping)."""
    motd = status.motd.to_plain() if status.motd is not None else ""
    return QueryResult(
        players=max(0, int(status.players.online)),
        max_players=max(0, int(status.players.max)),
        version=str(status.version.name or "")[:VERSION_CHARS],
        motd=" ".join(motd.split())[:MOTD_CHARS],
    )


async def query_minecraft(host: str, port: int, timeout: float) -> QueryResult:
    from mcstatus import JavaServer

    return _mcstatus_result(await JavaServer(host, port, timeout=timeout).async_status(tries=1))


async def query_source(host: str, port: int, timeout: float) -> QueryResult:
    import a2s

    info = await a2s.ainfo((host, port), timeout=timeout)
    return QueryResult(
        # Bots are not players.
        players=max(0, int(info.player_count) - int(getattr(info, "bot_count", 0) or 0)),
        max_players=max(0, int(info.max_players)),
        version=str(getattr(info, "version", "") or "")[:VERSION_CHARS],
        motd=" ".join(str(info.server_name or "").split())[:MOTD_CHARS],
    )


async def query_bedrock(host: str, port: int, timeout: float) -> QueryResult:
    from mcstatus import BedrockServer

    server = BedrockServer(host, port, timeout=timeout)
    return _mcstatus_result(await server.async_status(tries=1))


CLIENTS: dict[str, Callable[[str, int, float], Awaitable[QueryResult]]] = {
    "minecraft": query_minecraft,
    "source": query_source,
    "bedrock": query_bedrock,
}


def query_target(server: Any) -> tuple[str, str, int] | None:
    """(protocol, host, port) of a server whose template has a query, else None. ``port`` of
    the query names the allocation: ``game`` (the default) or one of the template's named ports."""
    spec = server.spec
    query = getattr(spec.template, "query", None)
    if not query or spec.allocation is None:
        return None
    protocol = query.get("protocol")
    if protocol not in CLIENTS:
        return None
    name = query.get("port") or "game"
    address = spec.allocation
    if name != "game":
        named = [item for item in getattr(spec, "allocations", ()) if item.name == name]
        if not named:
            return None
        address = named[0]
    # A wildcard address is reached on loopback: the agent runs on the server's node.
    host = address.ip if address.ip not in ("0.0.0.0", "::", "") else "127.0.0.1"  # noqa: S104
    return protocol, host, address.port


class QueryLoop:
    def __init__(
        self,
        servers: Callable[[], Iterable[Any]],
        *,
        interval_seconds: float,
        timeout_seconds: float,
        concurrency: int,
        not_responding_after: int = NOT_RESPONDING_AFTER,
        changed: Callable[[Any, bool], None] | None = None,
    ):
        self._servers = servers
        self._interval = interval_seconds
        self._timeout = timeout_seconds
        self._slots = asyncio.Semaphore(concurrency)
        self._not_responding_after = not_responding_after
        self._changed = changed
        self.states: dict[str, QueryState] = {}

    async def run(self) -> None:
        while True:
            started = time.monotonic()
            try:
                await self.query_all()
            except Exception:
                log.exception("game queries failed")
            await asyncio.sleep(max(0.0, self._interval - (time.monotonic() - started)))

    async def query_all(self) -> None:
        targets = []
        for server in self._servers():
            target = query_target(server) if server.status == "running" else None
            if target is not None and server.pid is not None:
                targets.append((server, target))
        wanted = {server.id for server, _ in targets}
        for server_id in set(self.states) - wanted:
            del self.states[server_id]
        await asyncio.gather(*(self._query(server, *target) for server, target in targets))

    async def _query(self, server: Any, protocol: str, host: str, port: int) -> None:
        state = self.states.setdefault(server.id, QueryState())
        if state.pid != server.pid:  # a new run starts afresh
            self.states[server.id] = state = QueryState(pid=server.pid)
        async with self._slots:
            try:
                result = await asyncio.wait_for(
                    CLIENTS[protocol](host, port, self._timeout), self._timeout + 1
                )
            except Exception as error:  # any failure is "did not answer"
                log.debug("%s: %s query of %s:%s: %r", server.id, protocol, host, port, error)
                result = None
        state.at = time.time()
        if result is not None:
            state.result, state.failures, state.answered_once = result, 0, True
            if state.not_responding:
                state.not_responding = False
                self._notify(server, True)
            return
        state.failures += 1
        state.result = None
        if not state.not_responding and state.failures >= self._not_responding_after:
            state.not_responding = True
            self._notify(server, False)

    def _notify(self, server: Any, responding: bool) -> None:
        if self._changed is not None:
            try:
                self._changed(server, responding)
            except Exception:
                log.exception("%s: the query state change was not handled", server.id)

    def sample_fields(self, server_id: str) -> dict[str, Any]:
        """What the usage sample of a server says of its query: nothing for a server without
        one (or not queried yet)."""
        state = self.states.get(server_id)
        if state is None or state.at == 0.0:
            return {}
        result = state.result
        return {
            "players": result.players if result else None,
            "max_players": result.max_players if result else None,
            "game_version": result.version if result else None,
            "motd": result.motd if result else None,
            "responding": not state.not_responding,
        }

    def forget(self, server_id: str) -> None:
        self.states.pop(server_id, None)
