"""Running the real worker inside a test, and reading what it left behind."""

from unittest import mock

from django.core.management import call_command


def run_worker(verbosity: int = 0) -> None:
    """Process every queued task with the real ``db_worker`` command, then return.

    The worker closes "old" database connections between tasks, as a long-running process
    should; inside a test that would close the test's own connection and its transaction (which
    SQLite's in-memory database happens to survive), so that one call is switched off here.
    """
    with mock.patch("django_tasks_db.management.commands.db_worker.close_old_connections"):
        call_command(
            "db_worker", "--batch", "--no-startup-delay", "--no-reload", verbosity=verbosity
        )


MINECRAFT = {
    "name": "Survival SMP",
    "game": "minecraft-java",
    "region": "eu-central",
    "variables": {"EULA": True},
}
