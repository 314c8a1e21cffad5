"""A stand-in for the control plane's /v1/agent/* endpoints: an aiohttp app on loopback, in a
thread of its own, that records what the agent posts and answers hello as told."""

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from tests.agent.harness import free_port


class FakeControlPlane:
    def __init__(self, token: str):
        self.token = token
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.hellos: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.samples: list[dict[str, Any]] = []
        self.downloads: list[dict[str, str]] = []
        # What hello answers; a test sets servers (specs with "desired") and the key.
        self.hello_answer: dict[str, Any] = {"servers": []}
        self.files: dict[str, bytes] = {}
        # The next event posts answered 503: the control plane is down until they are spent
        # (usage posts are refused meanwhile too, without counting).
        self.failing_event_posts = 0
        # SFTP sign-ins: (username, server id, credential) → the yes to answer, where the
        # credential is a public key's "type base64" or a password; anything else is a no.
        # sftp_down: every ask answered 503.
        self.sftp_grants: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.sftp_asks: list[dict[str, Any]] = []
        self.sftp_down = False
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> "FakeControlPlane":
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("the fake control plane did not start")
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/v1/agent/hello", self._hello)
        app.router.add_post("/v1/agent/usage", self._usage)
        app.router.add_post("/v1/agent/events", self._events)
        app.router.add_post("/v1/agent/sftp/auth", self._sftp_auth)
        app.router.add_get("/files/{name}", self._file)
        runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", self.port)
        self._loop.run_until_complete(site.start())
        self._started.set()
        self._loop.run_forever()
        self._loop.run_until_complete(runner.cleanup())
        self._loop.close()

    # -- endpoints ------------------------------------------------------------------------------

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {self.token}"

    @staticmethod
    def _refuse() -> web.Response:
        body = {"error": {"code": "invalid_token", "message": "Bad node token."}}
        return web.json_response(body, status=401)

    @staticmethod
    def _unavailable() -> web.Response:
        body = {"error": {"code": "unavailable", "message": "Try again."}}
        return web.json_response(body, status=503)

    async def _hello(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return self._refuse()
        body = await request.json()
        with self._lock:
            self.hellos.append(body)
            answer = dict(self.hello_answer)
        return web.json_response(answer)

    async def _usage(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return self._refuse()
        samples = (await request.json())["samples"]
        with self._lock:
            if self.failing_event_posts > 0:  # down for every call while it refuses events
                return self._unavailable()
            self.samples.extend(samples)
        return web.json_response({"accepted": len(samples)}, status=202)

    async def _events(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return self._refuse()
        events = (await request.json())["events"]
        with self._lock:
            if self.failing_event_posts > 0:
                self.failing_event_posts -= 1
                return self._unavailable()
            self.events.extend(events)
        return web.json_response({"accepted": len(events)})

    @staticmethod
    def _sftp_credential(body: dict[str, Any]) -> str:
        if "public_key" in body:
            return " ".join(str(body["public_key"]).split()[:2])
        return str(body.get("password"))

    async def _sftp_auth(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return self._refuse()
        body = await request.json()
        with self._lock:
            self.sftp_asks.append(body)
            if self.sftp_down:
                return self._unavailable()
            key = (body.get("username"), body.get("server_id"), self._sftp_credential(body))
            grant = self.sftp_grants.get(key)
        if grant is None:
            return web.json_response({"success": True, "data": {"allowed": False}})
        return web.json_response({"success": True, "data": {"allowed": True, **grant}})

    def sftp_allow(
        self,
        username: str,
        server_id: str,
        credential: str,
        *,
        user_id: str = "usr_SftpUser",
        permissions: tuple[str, ...] = ("files.read", "files.write"),
    ) -> None:
        """Let ``credential`` (an OpenSSH public key line, or a password) sign in."""
        key = (username, server_id, " ".join(credential.split()[:2]))
        if not credential.startswith("ssh-"):
            key = (username, server_id, credential)
        with self._lock:
            self.sftp_grants[key] = {"user_id": user_id, "permissions": list(permissions)}

    def sftp_revoke(self, username: str, server_id: str, credential: str) -> None:
        with self._lock:
            for key in list(self.sftp_grants):
                if key[:2] == (username, server_id) and key[2] in (
                    credential,
                    " ".join(credential.split()[:2]),
                ):
                    del self.sftp_grants[key]

    async def _file(self, request: web.Request) -> web.Response:
        with self._lock:
            self.downloads.append({"authorization": request.headers.get("Authorization", "")})
        if not self._authorized(request):
            return self._refuse()
        content = self.files.get(request.match_info["name"])
        if content is None:
            raise web.HTTPNotFound()
        return web.Response(body=content, content_type="application/octet-stream")

    # -- what tests look at ---------------------------------------------------------------------

    def all_events(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events)

    def events_of(self, instance_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [event for event in self.events if event["instance_id"] == instance_id]

    def samples_of(self, instance_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [sample for sample in self.samples if sample["instance_id"] == instance_id]

    def wait_for(self, what: Callable[[], Any], timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = what()
            if result:
                return result
            time.sleep(0.05)
        raise AssertionError(f"the fake control plane never saw it within {timeout} s")
