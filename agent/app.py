"""The agent's HTTP API under /api/ (PROTOCOL.md "Control plane → agent").

Every call needs the node token (compared in constant time) except the console WebSocket, which
authenticates with a console token in its first message, and the file transfers, whose signed
URLs carry a token (agent/transfers.py). Every error is ``{"error": {"code", "message"}}``;
only this module knows how an error becomes HTTP.
"""

import hmac
import json
import logging
from typing import Any

from aiohttp import web

from agent import backup_routes, file_routes, sftp, transfers
from agent.errors import AgentError, InvalidJson, InvalidParameter, InvalidToken
from agent.node import Node
from agent.spec import parse_spec
from agent.ws import console_socket, verify_request_token

log = logging.getLogger(__name__)

NODE = web.AppKey("node", Node)
CONSOLE_ROUTE = "console"
STATUS_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
}
MAX_BODY_BYTES = 1024 * 1024


def error_response(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


@web.middleware
async def errors_middleware(request: web.Request, handler):
    try:
        return await handler(request)
    except AgentError as error:
        return error_response(error.status, error.code, error.message)
    except web.HTTPException as error:
        if error.status < 400:
            raise
        code = STATUS_CODES.get(error.status, "http_error")
        return error_response(error.status, code, error.reason)
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return error_response(500, "internal_error", "The agent failed; see its log.")


def auth_middleware(node: Node):
    """The node token (an operator's call), compared in constant time, or a control-plane
    request token: a one-minute JWT for this node signed with the control plane's key, which
    only keeps a digest of the node token and so cannot send it (PROTOCOL.md)."""
    expected = node.config.token.encode()

    @web.middleware
    async def middleware(request: web.Request, handler):
        route = request.match_info.route
        if route.name == CONSOLE_ROUTE or route.name in transfers.ROUTES:
            return await handler(request)  # a token of their own: the console's, a signed URL's
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        given = given.strip()
        if scheme.lower() != "bearer":
            raise InvalidToken("A valid node token is required.")
        if given.startswith("hmn_"):
            # aiohttp keeps a header's undecodable bytes as surrogates: compare them as bytes.
            if not hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected):
                raise InvalidToken("A valid node token is required.")
        elif not verify_request_token(
            given, public_key=node.console_key, node_id=node.config.node_id
        ):
            raise InvalidToken("A valid node token or control-plane token is required.")
        return await handler(request)

    return middleware


async def read_json(request: web.Request) -> Any:
    try:
        return json.loads(await request.read() or b"{}")
    except ValueError:
        raise InvalidJson("The body is not valid JSON.") from None


def node_of(request: web.Request) -> Node:
    return request.app[NODE]


async def system(request: web.Request) -> web.Response:
    return web.json_response(node_of(request).system())


async def server_put(request: web.Request) -> web.Response:
    spec = parse_spec(await read_json(request), server_id=request.match_info["id"])
    runtime, created = node_of(request).put(spec)
    return web.json_response(runtime.describe(), status=201 if created else 200)


async def server_get(request: web.Request) -> web.Response:
    return web.json_response(node_of(request).get(request.match_info["id"]).describe())


async def server_delete(request: web.Request) -> web.Response:
    await node_of(request).delete(request.match_info["id"])
    return web.Response(status=204)


async def server_install(request: web.Request) -> web.Response:
    runtime = node_of(request).get(request.match_info["id"])
    return web.json_response(await runtime.install())


async def server_start(request: web.Request) -> web.Response:
    runtime = node_of(request).get(request.match_info["id"])
    return web.json_response(await runtime.start())


async def server_stop(request: web.Request) -> web.Response:
    runtime = node_of(request).get(request.match_info["id"])
    return web.json_response(await runtime.stop())


async def server_kill(request: web.Request) -> web.Response:
    runtime = node_of(request).get(request.match_info["id"])
    return web.json_response(await runtime.kill())


async def server_command(request: web.Request) -> web.Response:
    runtime = node_of(request).get(request.match_info["id"])
    body = await read_json(request)
    runtime.send_command(body.get("command") if isinstance(body, dict) else None)
    return web.json_response({"status": runtime.status})


async def server_logs(request: web.Request) -> web.Response:
    runtime = node_of(request).get(request.match_info["id"])
    raw = request.query.get("lines", "100")
    if not raw.isdigit() or not 1 <= int(raw) <= runtime.config.console_lines:
        raise InvalidParameter(f"lines: a whole number from 1 to {runtime.config.console_lines}.")
    return web.json_response({"lines": runtime.console.tail(int(raw))})


async def sync(request: web.Request) -> web.Response:
    return web.json_response(await node_of(request).sync(await read_json(request)))


async def console(request: web.Request) -> web.StreamResponse:
    node = node_of(request)
    return await console_socket(request, node.get(request.match_info["id"]), node)


def make_app(node: Node) -> web.Application:
    app = web.Application(
        middlewares=[errors_middleware, auth_middleware(node)],
        client_max_size=MAX_BODY_BYTES,
    )
    app[NODE] = node
    server = "/api/servers/{id}"
    app.router.add_get("/api/system", system)
    app.router.add_put(server, server_put)
    app.router.add_get(server, server_get, allow_head=False)
    app.router.add_delete(server, server_delete)
    app.router.add_post(f"{server}/install", server_install)
    app.router.add_post(f"{server}/start", server_start)
    app.router.add_post(f"{server}/stop", server_stop)
    app.router.add_post(f"{server}/kill", server_kill)
    app.router.add_post(f"{server}/commands", server_command)
    app.router.add_get(f"{server}/logs", server_logs)
    app.router.add_get(f"{server}/ws", console, name=CONSOLE_ROUTE)
    app.router.add_post("/api/sync", sync)
    file_routes.add_routes(app, node, server)
    transfers.add_routes(app, node, server)
    backup_routes.add_routes(app, node, server)
    sftp.add_server(app, node)
    return app
