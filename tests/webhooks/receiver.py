"""A real HTTP receiver for webhook tests: a threaded server on 127.0.0.1 that records every
request, answers from a script and verifies each request's Standard Webhooks signature.

    with Receiver(secret) as receiver:
        receiver.script([500, 500, 500, 200])          # then the default (200) forever
        receiver.script([Answer(503, headers={"Retry-After": "120"})])
        endpoint_url = receiver.url("/hooks/a")
        ...
        assert receiver.requests[0].verified

Verification runs with ``standardwebhooks.Webhook(secret).verify``. Its timestamp check uses the
wall clock; tests that drive deliveries with their own clock set ``receiver.clock`` to that
clock, and ``verify`` then checks the timestamp against it (the signature check is unchanged).
"""

import threading
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

import standardwebhooks.webhooks as standard_webhooks
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

_clock_lock = threading.RLock()


@contextmanager
def _clock_at(at: datetime | None):
    """Make the library's ``datetime.now`` answer ``at`` for the duration (one thread at a time)."""
    if at is None:
        with _clock_lock:
            yield
        return

    class _Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return at.astimezone(tz) if tz else at.replace(tzinfo=None)

    with _clock_lock, mock.patch.object(standard_webhooks, "datetime", _Frozen):
        yield


def verify(secret: str, body: bytes | str, headers: dict[str, str], at: datetime | None = None):
    """``Webhook(secret).verify(body, headers)``, with the timestamp judged at ``at`` if given."""
    with _clock_at(at):
        return Webhook(secret).verify(body, headers)


@dataclass
class Answer:
    """What the receiver answers to one request. ``stream_bytes`` sends that many bytes of body
    in chunks (stopping when the client hangs up), recording how many went out."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b"ok"
    stream_bytes: int = 0


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    arrived_at: datetime
    verified: bool
    error: str = ""
    answered: int = 0
    bytes_sent: int = 0
    finished: threading.Event = field(default_factory=threading.Event)

    @property
    def webhook_id(self) -> str:
        return self.headers.get("webhook-id", "")

    def json(self):
        import json

        return json.loads(self.body)


class Receiver:
    def __init__(
        self,
        secret: str | None = None,
        answers: Iterable[int | Answer] = (),
        default: int | Answer = 200,
        record_bodies: bool = True,
    ):
        self.secrets: dict[str, str] = {}  # path → secret; "" for every path
        if secret:
            self.secrets[""] = secret
        self.default = default
        self.record_bodies = record_bodies
        self.clock: Callable[[], datetime] | None = None
        self.requests: list[Received] = []
        self._scripts: dict[str, list[int | Answer]] = {"": list(answers)}
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    # --- set-up ---------------------------------------------------------------------------

    def __enter__(self) -> "Receiver":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def script(self, answers: Iterable[int | Answer], path: str = "") -> None:
        """Answer the next requests (to ``path``, or to any path) with these, in order."""
        with self._lock:
            self._scripts[path] = list(answers)

    def set_secret(self, secret: str, path: str = "") -> None:
        self.secrets[path] = secret

    # --- reading --------------------------------------------------------------------------

    def to(self, path: str) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.requests) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._arrived.wait(remaining)
            return list(self.requests)

    # --- serving --------------------------------------------------------------------------

    def _next_answer(self, path: str) -> Answer:
        with self._lock:
            queue = self._scripts.get(path) or self._scripts.get("") or []
            answer = queue.pop(0) if queue else self.default
        return answer if isinstance(answer, Answer) else Answer(answer)

    def _record(self, received: Received) -> None:
        with self._arrived:
            self.requests.append(received)
            self._arrived.notify_all()

    def _check(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[bool, str]:
        secret = self.secrets.get(path) or self.secrets.get("")
        if not secret:
            return False, "no secret configured"
        try:
            verify(secret, body, headers, self.clock() if self.clock else None)
        except WebhookVerificationError as refused:
            return False, str(refused)
        return True, ""

    def _handler_class(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                arrived_at = datetime.now(UTC)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                verified, error = receiver._check(self.path, body, headers)
                answer = receiver._next_answer(self.path)
                received = Received(
                    method="POST",
                    path=self.path,
                    headers=headers,
                    body=body if receiver.record_bodies else b"",
                    arrived_at=arrived_at,
                    verified=verified,
                    error=error,
                    answered=answer.status,
                )
                receiver._record(received)
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                if answer.stream_bytes:
                    self.send_header("Content-Length", str(answer.stream_bytes))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    chunk = b"x" * 16384
                    try:
                        while received.bytes_sent < answer.stream_bytes:
                            self.wfile.write(chunk)
                            received.bytes_sent += len(chunk)
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                    finally:
                        received.finished.set()
                    self.close_connection = True
                    return
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)
                received.bytes_sent = len(answer.body)
                received.finished.set()

            do_GET = do_POST

        return Handler
