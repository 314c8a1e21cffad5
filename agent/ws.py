"""The console WebSocket (PROTOCOL.md "The console WebSocket"), and the tokens the control plane
signs for a customer to reach this agent directly.

The first message must authenticate with a console token: a JWT the control plane signed with
its Ed25519 key, for this node (``aud``) and this server (``server_id``), living at most 15
minutes. A file transfer's signed URL carries the same kind of token, with a file permission
and the file's ``path`` (agent/transfers.py). Output reaches each connection through its own
queue and token bucket: a slow or flooded client loses lines (and is told how many), the
server's process never waits for it.
"""

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import jwt
from aiohttp import WSMsgType, web
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from agent.errors import AgentError, InvalidToken
from agent.runtime import ServerRuntime

log = logging.getLogger(__name__)

ISSUER = "hosting-control-plane"
AUTH_TIMEOUT_SECONDS = 10
MAX_TOKEN_LIFETIME_SECONDS = 15 * 60
HISTORY_LINES = 100
LINES_PER_MESSAGE = 500
# Lines waiting for a slow client, in seconds of the allowed rate, before they are dropped.
QUEUE_SECONDS = 2
CLOSE_AUTH_FAILED = 4001
CLOSE_TOKEN_EXPIRED = 4002
REQUIRED_CLAIMS = ["iss", "aud", "server_id", "sub", "permissions", "iat", "exp", "jti"]


class TokenRefused(Exception):
    """Why a console or file transfer token is refused, in words for the client."""


class ConsoleAuthError(Exception):
    """The reason goes to the client in ``auth failed``."""


@dataclass(frozen=True)
class ConsoleGrant:
    user: str
    can_write: bool
    expires_at: float


@dataclass(frozen=True)
class FileGrant:
    """What a file transfer token allows: ``path`` (the customer's) for ``user``."""

    user: str
    path: str
    expires_at: float
    jti: str


def verify_request_token(token: str, *, public_key: Ed25519PublicKey | None, node_id: str) -> bool:
    """Whether ``token`` is the control plane's signed request token for this node: EdDSA,
    ``scope`` ``node``, this node's id as audience, at most a few minutes long, not expired."""
    if public_key is None or not isinstance(token, str) or not token.isascii():
        return False  # a JWT is ASCII; other text (a header's undecodable bytes) is not one
    try:
        claims = jwt.decode(
            token,
            key=public_key,
            algorithms=["EdDSA"],
            audience=node_id,
            issuer=ISSUER,
            options={"require": ["exp", "iat", "aud", "iss", "scope"]},
        )
    except jwt.InvalidTokenError:
        return False
    return claims["scope"] == "node" and claims["exp"] - claims["iat"] <= 300


def _grant_claims(
    token: Any,
    *,
    public_key: Ed25519PublicKey | None,
    node_id: str,
    server_id: str,
    permission: str,
) -> dict[str, Any]:
    """The claims of a token the control plane signed for one user: EdDSA, for this node and
    this server, granting ``permission``, living at most 15 minutes; else ``TokenRefused``."""
    if public_key is None:
        raise TokenRefused("this node has no console key yet")
    if not isinstance(token, str) or not token.isascii():
        raise TokenRefused("invalid token")
    try:
        claims = jwt.decode(
            token,
            key=public_key,
            algorithms=["EdDSA"],
            audience=node_id,
            issuer=ISSUER,
            options={"require": REQUIRED_CLAIMS},
        )
    except jwt.ExpiredSignatureError:
        raise TokenRefused("token expired") from None
    except jwt.InvalidTokenError:
        raise TokenRefused("invalid token") from None
    if claims["server_id"] != server_id:
        raise TokenRefused("token for another server")
    permissions = claims["permissions"]
    if not isinstance(permissions, list) or permission not in permissions:
        raise TokenRefused(f"token without {permission}")
    if claims["exp"] - claims["iat"] > MAX_TOKEN_LIFETIME_SECONDS:
        raise TokenRefused("token lives longer than 15 minutes")
    return claims


def verify_console_token(
    token: Any, *, public_key: Ed25519PublicKey | None, node_id: str, server_id: str
) -> ConsoleGrant:
    try:
        claims = _grant_claims(
            token,
            public_key=public_key,
            node_id=node_id,
            server_id=server_id,
            permission="console.read",
        )
    except TokenRefused as error:
        raise ConsoleAuthError(str(error)) from None
    return ConsoleGrant(
        user=str(claims["sub"]),
        can_write="console.write" in claims["permissions"],
        expires_at=float(claims["exp"]),
    )


def verify_file_token(
    token: Any,
    *,
    public_key: Ed25519PublicKey | None,
    node_id: str,
    server_id: str,
    permission: str,
    claim: str = "path",
) -> FileGrant:
    """A file transfer's token (``permission``: ``files.download`` or ``files.upload``) for
    ``server_id``, or ``InvalidToken`` (401) saying why not. A backup's download names its
    backup in the claim ``backup_id`` instead of ``path``: the grant's ``path`` is then that."""
    try:
        claims = _grant_claims(
            token,
            public_key=public_key,
            node_id=node_id,
            server_id=server_id,
            permission=permission,
        )
        if not isinstance(claims.get(claim), str) or not isinstance(claims["jti"], str):
            raise TokenRefused("invalid token")
    except TokenRefused as error:
        raise InvalidToken(f"This link cannot be used ({error}): ask for a new one.") from None
    return FileGrant(
        user=str(claims["sub"]),
        path=claims[claim],
        expires_at=float(claims["exp"]),
        jti=claims["jti"],
    )


class TokenBucket:
    def __init__(self, rate: int):
        self.rate = rate
        self.tokens = float(rate)
        self.updated = time.monotonic()

    def take(self, wanted: int) -> int:
        now = time.monotonic()
        self.tokens = min(self.rate, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        granted = min(wanted, int(self.tokens))
        self.tokens -= granted
        return granted


class ConsoleSession:
    """One authenticated WebSocket following one server."""

    def __init__(self, ws: web.WebSocketResponse, server: ServerRuntime, node: Any):
        self.ws = ws
        self.server = server
        self.node = node
        self.grant: ConsoleGrant | None = None
        self._bucket = TokenBucket(node.config.console_max_lines_per_second)
        self._max_queued = node.config.console_max_lines_per_second * QUEUE_SECONDS
        self._outbox: deque[dict[str, Any]] = deque()
        self._queued_lines = 0
        self._dropped = 0
        self._wake = asyncio.Event()
        self._timers: list[asyncio.TimerHandle] = []
        self._closing: tuple[int, dict[str, Any]] | None = None

    # -- what the server tells us (called by the runtime, never blocking) ---------------------

    def on_lines(self, lines: list[str]) -> None:
        granted = self._bucket.take(len(lines))
        granted = max(0, min(granted, self._max_queued - self._queued_lines))
        self._dropped += len(lines) - granted
        if granted:
            self._queue_lines(lines[-granted:])
        elif self._dropped:
            self._wake.set()

    def _queue_lines(self, lines: list[str]) -> None:
        last = self._outbox[-1] if self._outbox else None
        if last is None or last["event"] != "console output":
            last = {"event": "console output", "args": []}
            self._outbox.append(last)
        for line in lines:
            if len(last["args"]) >= LINES_PER_MESSAGE:
                last = {"event": "console output", "args": []}
                self._outbox.append(last)
            last["args"].append(line)
        self._queued_lines += len(lines)
        self._wake.set()

    def on_status(self, status: str) -> None:
        if status == "deleted":
            self._close_with(1000, {"event": "status", "args": ["deleted"]})
            return
        self._send_later({"event": "status", "args": [status]})

    def on_stats(self, sample: dict[str, Any]) -> None:
        self._send_later({"event": "stats", "args": [sample]})

    def _send_later(self, message: dict[str, Any]) -> None:
        self._outbox.append(message)
        self._wake.set()

    def _close_with(self, code: int, message: dict[str, Any]) -> None:
        self._closing = (code, message)
        self._wake.set()

    # -- the connection -----------------------------------------------------------------------

    async def run(self) -> None:
        if not await self._authenticate_first():
            return
        # History first, queued before the live output is listened to: nothing in between.
        self._send_later({"event": "auth success"})
        self._send_later({"event": "status", "args": [self.server.status]})
        history = self.server.console.tail(HISTORY_LINES)
        if history:
            self._queue_lines(history)
        self.server.watchers.add(self)
        self.server.console.add_listener(self.on_lines)
        sender = asyncio.create_task(self._send_loop())
        try:
            await self._receive_loop()
        finally:
            self.server.watchers.discard(self)
            self.server.console.remove_listener(self.on_lines)
            self._cancel_timers()
            sender.cancel()
            # A client gone mid-send ends the sender with a connection error: nothing to do.
            with contextlib.suppress(asyncio.CancelledError, ConnectionError, RuntimeError):
                await sender

    async def _send(self, message: dict[str, Any]) -> None:
        await self.ws.send_str(json.dumps(message))

    async def _authenticate_first(self) -> bool:
        try:
            message = await self.ws.receive(timeout=AUTH_TIMEOUT_SECONDS)
        except TimeoutError:
            await self._refuse("authentication timed out")
            return False
        if message.type != WSMsgType.TEXT:
            await self.ws.close()
            return False
        event, args = self._parse(message.data)
        if event != "auth":
            await self._refuse("the first message must be auth")
            return False
        return await self._accept(args)

    async def _accept(self, args: list[Any]) -> bool:
        try:
            grant = verify_console_token(
                args[0] if args else None,
                public_key=self.node.console_key,
                node_id=self.node.config.node_id,
                server_id=self.server.id,
            )
        except ConsoleAuthError as error:
            await self._refuse(str(error))
            return False
        self.grant = grant
        self._schedule_expiry(grant.expires_at)
        return True

    async def _refuse(self, reason: str) -> None:
        await self._send({"event": "auth failed", "args": [reason]})
        await self.ws.close(code=CLOSE_AUTH_FAILED, message=b"auth failed")

    def _schedule_expiry(self, expires_at: float) -> None:
        self._cancel_timers()
        loop = asyncio.get_running_loop()
        left = expires_at - time.time()
        self._timers = [
            loop.call_later(max(0.0, left - 60), self._send_later, {"event": "token expiring"}),
            loop.call_later(
                max(0.0, left),
                self._close_with,
                CLOSE_TOKEN_EXPIRED,
                {"event": "token expired"},
            ),
        ]

    def _cancel_timers(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers = []

    @staticmethod
    def _parse(data: str) -> tuple[str | None, list[Any]]:
        try:
            message = json.loads(data)
        except ValueError:
            return None, []
        if not isinstance(message, dict):
            return None, []
        args = message.get("args")
        return message.get("event"), args if isinstance(args, list) else []

    async def _receive_loop(self) -> None:
        async for message in self.ws:
            if message.type != WSMsgType.TEXT:
                continue
            event, args = self._parse(message.data)
            if event == "auth":
                if not await self._accept(args):
                    return
                await self._send({"event": "auth success"})
            elif event == "send command":
                await self._command(args)
            else:
                await self._send({"event": "error", "args": [f"unknown event: {event}"]})

    async def _command(self, args: list[Any]) -> None:
        if self.grant is None or not self.grant.can_write:
            await self._send({"event": "error", "args": ["this token may not send commands"]})
            return
        try:
            self.server.send_command(args[0] if args else "")
        except AgentError as error:
            await self._send({"event": "error", "args": [error.message]})
            return
        log.info("%s: console command by %s", self.server.id, self.grant.user)

    async def _send_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._outbox:
                message = self._outbox.popleft()
                if message["event"] == "console output":
                    self._queued_lines -= len(message["args"])
                await self._send(message)
            if self._dropped:
                dropped, self._dropped = self._dropped, 0
                await self._send({"event": "console throttled", "args": [dropped]})
            if self._closing is not None:
                code, message = self._closing
                await self._send(message)
                await self.ws.close(code=code)
                return


async def console_socket(request: web.Request, server: ServerRuntime, node: Any):
    ws = web.WebSocketResponse(heartbeat=30, max_msg_size=64 * 1024)
    await ws.prepare(request)
    with contextlib.suppress(ConnectionResetError):
        await ConsoleSession(ws, server, node).run()
    return ws
