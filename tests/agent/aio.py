"""Run a coroutine to completion from synchronous test code.

`asyncio.run` refuses to start while this thread already has a running loop, and it does: the
browser tests' session-scoped Playwright (its sync API keeps a loop running in the main thread)
outlives them, and pytest-django runs the tests without a database after them. A coroutine of
ours therefore gets a fresh loop in a thread of its own."""

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def run(coroutine: Coroutine[Any, Any, Any], timeout: float = 30) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coroutine, timeout)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="test-asyncio") as pool:
        return pool.submit(asyncio.run, bounded()).result()
