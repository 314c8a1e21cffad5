"""Racing calls against each other, as concurrent requests or workers would."""

import threading
from collections.abc import Callable

from django.db import connection


def race(*calls: Callable, timeout: float = 60) -> tuple[list, list[BaseException]]:
    """Run each call in its own thread (and so its own database connection), all released
    together by a barrier; their results in order and whatever they raised."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)
    failures: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[index] = calls[index]()
        except BaseException as failure:
            failures.append(failure)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    return results, failures
