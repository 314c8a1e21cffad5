"""Running the real worker inside a test, and reading what it left behind."""

from django.core.management import call_command


def run_worker() -> None:
    """Process every queued task with the real ``db_worker`` command, then return."""
    call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload", verbosity=0)


MINECRAFT = {
    "name": "Survival SMP",
    "game": "minecraft-java",
    "region": "eu-central",
    "variables": {"EULA": True},
}
