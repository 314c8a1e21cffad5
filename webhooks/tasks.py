"""Background work for webhooks, run by ``manage.py db_worker``."""

from django.tasks import task


@task
def deliver_webhook(delivery_id: str) -> None:
    from webhooks.services import webhook_deliver

    webhook_deliver(delivery_id=delivery_id)
