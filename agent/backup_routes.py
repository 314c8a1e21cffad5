"""The agent's backup API under ``/api/servers/{id}/backups`` (PROTOCOL.md "Backups"), and the
download of a node-stored backup through a signed URL (its token checked as a file download's,
agent/transfers.py). The work is agent/backups.py's; these read the calls and answer them.
"""

import asyncio
import os

from aiohttp import web

from agent import transfers
from agent.backups import parse_backup_id
from agent.errors import InvalidToken, NotFound, ValidationFailed
from agent.file_routes import FILES_NODE, FILES_POOL, UnknownServer, json_body
from agent.node import Node
from agent.runtime import ServerRuntime


def _runtime(request: web.Request) -> ServerRuntime:
    node: Node = request.app[FILES_NODE]
    try:
        return node.get(request.match_info["id"])
    except NotFound:
        raise UnknownServer("No such server on this node.") from None


def _backup_id(request: web.Request) -> str:
    return parse_backup_id(request.match_info["backup_id"])


async def create(request: web.Request) -> web.Response:
    body = await json_body(request)
    runtime = _runtime(request)
    started = request.app[FILES_NODE].backups.start_backup(runtime, body)
    return web.json_response(started, status=202)


async def status(request: web.Request) -> web.Response:
    runtime = _runtime(request)
    backups = request.app[FILES_NODE].backups
    return web.json_response(backups.status(runtime.id, request.match_info["backup_id"]))


async def restore(request: web.Request) -> web.Response:
    body = await json_body(request)
    runtime = _runtime(request)
    backups = request.app[FILES_NODE].backups
    started = backups.start_restore(runtime, _backup_id(request), body)
    return web.json_response(started, status=202)


async def delete(request: web.Request) -> web.Response:
    body = await json_body(request)
    runtime = _runtime(request)
    await request.app[FILES_NODE].backups.delete(runtime.id, _backup_id(request), body)
    return web.Response(status=204)


async def download(request: web.Request) -> web.StreamResponse:
    grant = transfers.grant_of(request, "backups.download", claim="backup_id")
    runtime = _runtime(request)
    backup_id = request.match_info["backup_id"]
    if grant.path != backup_id:
        raise InvalidToken(
            "This link cannot be used (token for another backup): ask for a new one."
        )
    try:
        parse_backup_id(backup_id)
    except ValidationFailed:
        raise InvalidToken("This link cannot be used (invalid token): ask for a new one.") from None
    backups = request.app[FILES_NODE].backups
    fd, info = await asyncio.get_running_loop().run_in_executor(
        request.app[FILES_POOL], backups.open_stored, runtime.id, backup_id
    )
    try:
        return await transfers.send(request, fd, info, name=f"{backup_id}.tar.gz")
    finally:
        os.close(fd)


def add_routes(app: web.Application, node: Node, server: str) -> None:
    """Mount the backup routes under ``server`` (the server's path). They use the file routes'
    pool and node: mount those first (agent/file_routes.py)."""
    assert app[FILES_NODE] is node
    backups = f"{server}/backups"
    one = f"{backups}/{{backup_id}}"
    app.router.add_post(backups, create)
    app.router.add_get(one, status, allow_head=False)
    app.router.add_delete(one, delete)
    app.router.add_post(f"{one}/restore", restore)
    name = transfers.BACKUP_DOWNLOAD_ROUTE
    app.router.add_get(f"{one}/download", download, name=name)
    app.router.add_route("OPTIONS", f"{one}/download", transfers.preflight, name=name)
