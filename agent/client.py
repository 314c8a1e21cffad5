"""The control plane client: hello, events (in order, retried until delivered) and usage samples
(batched every AGENT_BATCH_SECONDS, a bounded backlog dropping the oldest first).

With no AGENT_CONTROL_PLANE_URL nothing is sent: events and samples are dropped as they come.
"""

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

import aiohttp

from agent import __version__
from agent.clock import iso

log = logging.getLogger(__name__)

MAX_SAMPLES_PER_CALL = 5000
MAX_SAMPLE_BACKLOG = 50_000
MAX_EVENTS_PER_CALL = 500
MAX_EVENT_BACKLOG = 10_000
MAX_BACKOFF_SECONDS = 30.0
# Answers that refuse the batch itself: sent again, it would block everything after it forever.
# Anything else (401 with a token being rotated, 5xx, no answer) is retried.
REFUSED_BATCH = (400, 413, 422)


class ControlPlaneError(Exception):
    def __init__(self, status: int | None, message: str):
        super().__init__(message)
        self.status = status


class ControlPlaneClient:
    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        batch_seconds: float,
        events: list[dict[str, Any]] | None = None,
        on_events_changed: Callable[[], None] = lambda: None,
        on_reconnect: Callable[[], None] = lambda: None,
    ):
        self.base_url = base_url
        self._token = token
        self._batch_seconds = batch_seconds
        self.events: deque[dict[str, Any]] = deque(events or [], maxlen=MAX_EVENT_BACKLOG)
        self.samples: deque[dict[str, Any]] = deque(maxlen=MAX_SAMPLE_BACKLOG)
        self._on_events_changed = on_events_changed
        # Called when the control plane answers again after it could not be reached: the node
        # then says hello, and the answer is the full state to sync to (PROTOCOL.md).
        self._on_reconnect = on_reconnect
        self._unreachable = False
        self._wake_events = asyncio.Event()
        self._session: aiohttp.ClientSession | None = None
        self._tasks: list[asyncio.Task] = []

    @property
    def enabled(self) -> bool:
        return bool(self.base_url)

    async def start(self) -> None:
        if not self.enabled:
            self.events.clear()
            return
        self._session = aiohttp.ClientSession(
            headers={
                "Authorization": f"Bearer {self._token}",
                "User-Agent": f"hms-agent/{__version__}",
            },
            timeout=aiohttp.ClientTimeout(total=30, sock_connect=10),
        )
        self._tasks = [
            asyncio.create_task(self._deliver_events()),
            asyncio.create_task(self._deliver_samples()),
        ]
        if self.events:
            self._wake_events.set()

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._session is not None:
            # One last try, briefly: what is left stays in the state file (events) or is lost.
            with contextlib.suppress(TimeoutError, ControlPlaneError, aiohttp.ClientError):
                await asyncio.wait_for(self._flush_once(), timeout=2)
            await self._session.close()

    async def _flush_once(self) -> None:
        if self.events:
            await self._post_events()
        if self.samples:
            await self._post_samples()

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        assert self._session is not None
        # No redirects: the token goes to the configured address and nowhere else.
        try:
            answer = await self._post(path, body)
        except (aiohttp.ClientError, TimeoutError):
            self._unreachable = True
            raise
        except ControlPlaneError as error:
            self._unreachable = self._unreachable or (error.status or 500) >= 500
            raise
        if path == "/v1/agent/hello":
            self._unreachable = False  # its answer is the full sync
        elif self._unreachable:
            self._unreachable = False
            log.info("the control plane answers again: saying hello for a full sync")
            self._on_reconnect()
        return answer

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        assert self._session is not None
        async with self._session.post(
            f"{self.base_url}{path}", json=body, allow_redirects=False
        ) as response:
            try:
                answer = await response.json(content_type=None)
            except ValueError:
                answer = {}
            if response.status >= 300:
                error = answer.get("error", {}) if isinstance(answer, dict) else {}
                message = error.get("message") or response.reason or "no message"
                raise ControlPlaneError(response.status, f"HTTP {response.status}: {message}")
            if isinstance(answer, dict) and isinstance(answer.get("data"), dict):
                answer = answer["data"]  # the control plane's envelope: {"success", "data"}
            return answer if isinstance(answer, dict) else {}

    async def hello(self, body: dict[str, Any]) -> dict[str, Any]:
        return await self.post("/v1/agent/hello", body)

    # -- events ---------------------------------------------------------------------------------

    def add_event(self, instance_id: str, type_: str, reason: str, **details: Any) -> None:
        """Queue an event; ``details`` are the type's own keys (a file upload's ``path``...),
        JSON values, kept with it in the state file until delivered."""
        if not self.enabled:
            log.debug("no control plane: event %s %s dropped", instance_id, type_)
            return
        self.events.append(
            {"instance_id": instance_id, "type": type_, "reason": reason, "at": iso(), **details}
        )
        self._on_events_changed()
        self._wake_events.set()

    async def _post_events(self) -> None:
        batch = list(self.events)[:MAX_EVENTS_PER_CALL]
        try:
            await self.post("/v1/agent/events", {"events": batch})
        except ControlPlaneError as error:
            if error.status not in REFUSED_BATCH:
                raise
            log.error("control plane refused %d events, dropped: %s", len(batch), error)
        for _ in batch:
            self.events.popleft()
        self._on_events_changed()

    async def _deliver_events(self) -> None:
        backoff = 1.0
        while True:
            await self._wake_events.wait()
            self._wake_events.clear()
            while self.events:
                try:
                    await self._post_events()
                    backoff = 1.0
                except (ControlPlaneError, aiohttp.ClientError, TimeoutError) as error:
                    log.warning("events not delivered (%s); retry in %.0f s", error, backoff)
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)

    # -- samples --------------------------------------------------------------------------------

    def add_sample(self, sample: dict[str, Any]) -> None:
        if self.enabled:
            self.samples.append(sample)

    async def _post_samples(self) -> None:
        batch = [
            self.samples.popleft() for _ in range(min(len(self.samples), MAX_SAMPLES_PER_CALL))
        ]
        try:
            await self.post("/v1/agent/usage", {"samples": batch})
        except BaseException as error:
            if isinstance(error, ControlPlaneError) and error.status in REFUSED_BATCH:
                log.error("control plane refused %d samples, dropped: %s", len(batch), error)
                return
            # Back in front of newer ones; past the backlog's bound, the oldest go first.
            self.samples = deque(batch + list(self.samples), maxlen=MAX_SAMPLE_BACKLOG)
            raise

    async def _deliver_samples(self) -> None:
        while True:
            await asyncio.sleep(self._batch_seconds)
            try:
                while self.samples:
                    await self._post_samples()
            except (ControlPlaneError, aiohttp.ClientError, TimeoutError) as error:
                log.warning("%d samples kept for later: %s", len(self.samples), error)
