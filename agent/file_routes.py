"""The agent's file manager API under ``/api/servers/{id}/files/`` (PROTOCOL.md "Files").

Each call runs one operation of agent/files.py in the files' thread pool, as the server's user
and confined to its folder; paths are the customer's (``/`` is the server's folder). The
control plane calls these with its request token, after deciding who may do what.
"""

import asyncio
import functools
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aiohttp import web

from agent import archives, pull
from agent.errors import InvalidJson, InvalidParameter, NotFound, ValidationFailed
from agent.files import ServerFiles
from agent.node import Node

FILES_POOL = web.AppKey("files_pool", ThreadPoolExecutor)
FILES_NODE = web.AppKey("files_node", Node)
MAX_PAGE = 1000
MAX_DELETE = 1000


def _text(body: dict, name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str):
        raise ValidationFailed(f"{name}: text is required.")
    return value


def _optional_text(body: dict, name: str) -> str | None:
    return None if body.get(name) is None else _text(body, name)


def _paths(body: dict, limit: int) -> list[str]:
    paths = body.get("paths")
    if (
        not isinstance(paths, list)
        or not 1 <= len(paths) <= limit
        or not all(isinstance(path, str) for path in paths)
    ):
        raise ValidationFailed(f"paths: a list of 1 to {limit} paths.")
    return paths


def _whole(query, name: str, default: int, low: int, high: int) -> int:
    raw = query.get(name, str(default))
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise InvalidParameter(f"{name}: a whole number from {low} to {high}.")
    return int(raw)


class UnknownServer(NotFound):
    code = "unknown_server"


def _files(request: web.Request) -> ServerFiles:
    try:
        runtime = request.app[FILES_NODE].get(request.match_info["id"])
    except NotFound:
        # Told apart from a missing file: the control plane says "not on its node yet".
        raise UnknownServer("No such server on this node.") from None
    return runtime.files()


async def _run(request: web.Request, operation: str | Callable, *args, **kwargs) -> Any:
    """``operation`` (a method's name, or a function taking the server's files first) in the
    files' pool, as the server's user."""
    files = _files(request)
    pool = request.app[FILES_POOL]
    method = (
        getattr(files, operation)
        if isinstance(operation, str)
        else functools.partial(operation, files)
    )
    return await asyncio.get_running_loop().run_in_executor(
        pool, lambda: files.run(method, *args, **kwargs)
    )


async def json_body(request: web.Request) -> dict:
    try:
        body = json.loads(await request.read() or b"{}")
    except ValueError:
        raise InvalidJson("The body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise ValidationFailed("The body is a JSON object.")
    return body


async def listing(request: web.Request) -> web.Response:
    query = request.query
    order = query.get("order", "asc")
    if order not in ("asc", "desc"):
        raise InvalidParameter("order: asc or desc.")
    result = await _run(
        request,
        "listing",
        query.get("path", "/"),
        sort=query.get("sort", "name"),
        descending=order == "desc",
        offset=_whole(query, "offset", 0, 0, 10**9),
        limit=_whole(query, "limit", 100, 1, MAX_PAGE),
    )
    return web.json_response(result)


async def stat(request: web.Request) -> web.Response:
    return web.json_response(await _run(request, "stat", request.query.get("path", "/")))


async def search(request: web.Request) -> web.Response:
    query = request.query
    found = await _run(
        request, "search", query.get("path", "/"), query=query.get("query", ""), limit=200
    )
    return web.json_response(found)


async def contents_get(request: web.Request) -> web.Response:
    limit = request.app[FILES_NODE].config.files_max_text_bytes
    read = await _run(request, "read_text", request.query.get("path", ""), max_bytes=limit)
    return web.json_response(read, headers={"ETag": f'"{read["version"]}"'})


async def contents_put(request: web.Request) -> web.Response:
    body = await json_body(request)
    if_match = request.headers.get("If-Match")
    if if_match is not None and if_match != "*":
        if_match = if_match.strip().removeprefix("W/").strip('"')
    written = await _run(
        request,
        "write_text",
        _text(body, "path"),
        _text(body, "content"),
        if_match=if_match,
    )
    return web.json_response(written, headers={"ETag": f'"{written["version"]}"'})


async def folders(request: web.Request) -> web.Response:
    body = await json_body(request)
    return web.json_response(await _run(request, "create_folder", _text(body, "path")), status=201)


async def rename(request: web.Request) -> web.Response:
    body = await json_body(request)
    moved = await _run(request, "rename", _text(body, "from"), _text(body, "to"))
    return web.json_response(moved)


async def copy(request: web.Request) -> web.Response:
    body = await json_body(request)
    copied = await _run(request, "copy", _text(body, "from"), _text(body, "to"))
    return web.json_response(copied, status=201)


async def delete(request: web.Request) -> web.Response:
    body = await json_body(request)
    return web.json_response(await _run(request, "delete", _paths(body, MAX_DELETE)))


async def chmod(request: web.Request) -> web.Response:
    body = await json_body(request)
    changed = await _run(request, "change_mode", _text(body, "path"), _text(body, "mode"))
    return web.json_response(changed)


async def compress(request: web.Request) -> web.Response:
    body = await json_body(request)
    config = request.app[FILES_NODE].config
    made = await _run(
        request,
        archives.compress,
        _paths(body, archives.MAX_SELECTION),
        kind=_optional_text(body, "format") or "tar.gz",
        to=_optional_text(body, "to"),
        max_members=config.archive_max_members,
    )
    return web.json_response(made, status=201, headers={"ETag": f'"{made["version"]}"'})


async def decompress(request: web.Request) -> web.Response:
    body = await json_body(request)
    overwrite = body.get("overwrite", False)
    if not isinstance(overwrite, bool):
        raise ValidationFailed("overwrite: true or false.")
    config = request.app[FILES_NODE].config
    unpacked = await _run(
        request,
        archives.decompress,
        _text(body, "path"),
        to=_optional_text(body, "to"),
        overwrite=overwrite,
        max_members=config.archive_max_members,
        max_bytes=config.archive_max_bytes,
    )
    return web.json_response(unpacked)


async def pull_file(request: web.Request) -> web.Response:
    body = await json_body(request)
    url, path = _text(body, "url"), _text(body, "path")
    pulled = await pull.pull(
        _files(request),
        request.app[FILES_POOL],
        url=url,
        path=path,
        config=request.app[FILES_NODE].config,
    )
    return web.json_response(pulled, status=201, headers={"ETag": f'"{pulled["version"]}"'})


def add_routes(app: web.Application, node: Node, server: str) -> None:
    """Mount the file routes under ``server`` (the server's path) with their thread pool."""
    app[FILES_NODE] = node
    app[FILES_POOL] = ThreadPoolExecutor(max_workers=4, thread_name_prefix="files")

    async def shut_down(app: web.Application) -> None:
        app[FILES_POOL].shutdown(wait=True, cancel_futures=True)

    app.on_cleanup.append(shut_down)
    files = f"{server}/files"
    app.router.add_get(f"{files}/list", listing)
    app.router.add_get(f"{files}/stat", stat)
    app.router.add_get(f"{files}/search", search)
    app.router.add_get(f"{files}/contents", contents_get)
    app.router.add_put(f"{files}/contents", contents_put)
    app.router.add_post(f"{files}/folders", folders)
    app.router.add_post(f"{files}/rename", rename)
    app.router.add_post(f"{files}/copy", copy)
    app.router.add_post(f"{files}/delete", delete)
    app.router.add_post(f"{files}/chmod", chmod)
    app.router.add_post(f"{files}/compress", compress)
    app.router.add_post(f"{files}/decompress", decompress)
    app.router.add_post(f"{files}/pull", pull_file)
