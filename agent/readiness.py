"""Whether a starting server is up: its template's ready line seen in the console within its
ready timeout. A start answers with the future this holds; the supervisor says what follows
(the status, the report, killing a server that stayed silent)."""

import asyncio
from collections.abc import Callable

from agent.console import Console
from agent.errors import StartFailed
from agent.spec import Template


def last_output(console: Console, lines: int = 15) -> str:
    """The server's own last lines (not the agent's), for a failed start's message."""
    recent = [line for line in console.tail(lines) if not line.startswith("[agent] ")]
    return "Last output:\n" + "\n".join(recent) if recent else "It printed nothing."


class Readiness:
    """The ready line of one start at a time: ``expect`` makes the future a start answers with,
    ``watch`` follows the console (or is ready at once without a pattern), ``stop_watching``
    ends it when the process goes."""

    def __init__(
        self,
        console: Console,
        *,
        template: Callable[[], Template],
        starting: Callable[[], bool],
        became_ready: Callable[[], None],
        timed_out: Callable[[str], None],
    ):
        self.console = console
        self._template = template  # the spec's current one: a new spec may come while starting
        self._starting = starting
        self._became_ready = became_ready
        self._timed_out = timed_out
        self.future: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    def expect(self) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # Nobody may be waiting (a start from sync): do not warn about an unread failure.
        future.add_done_callback(lambda done: done.cancelled() or done.exception())
        self.future = future
        return future

    def watch(self) -> None:
        template = self._template()
        if template.ready is None:
            self._ready()
            return
        self.console.add_listener(self._lines)
        self._timer = asyncio.get_running_loop().call_later(
            template.ready_timeout_seconds, self._ready_timed_out
        )

    def stop_watching(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.console.remove_listener(self._lines)

    @property
    def pending(self) -> bool:
        """Whether a start waits for the ready line."""
        return self.future is not None and not self.future.done()

    def fail(self, error: StartFailed) -> None:
        """The process went before it was ready: the start that waits for it fails."""
        if self.future is not None and not self.future.done():
            self.future.set_exception(error)

    def _lines(self, lines: list[str]) -> None:
        pattern = self._template().ready
        if self._starting() and pattern and any(pattern.search(line) for line in lines):
            self._ready()

    def _ready(self) -> None:
        self.stop_watching()
        if self.future is not None and not self.future.done():
            self.future.set_result(None)
        self._became_ready()

    def _ready_timed_out(self) -> None:
        self._timer = None
        if not self._starting() or self.future is None:
            return
        seconds = self._template().ready_timeout_seconds
        message = f"not ready within {seconds:g} seconds"
        self.console.write_agent_line(f"The server was {message}; killing it.")
        self.future.set_exception(
            StartFailed(f"The server was {message} (it was killed). {last_output(self.console)}")
        )
        self._timed_out(message)
