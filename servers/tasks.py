"""Background work for servers and bots, run by ``manage.py db_worker``."""

from django.tasks import task


@task
def run_action(action_id: str) -> None:
    from servers.services import action_run

    action_run(action_id=action_id)
