"""Billing's e-mails in tests: they are queued as a task (``billing_notices_send``)."""

from django.core import mail
from django_tasks_db.models import DBTaskResult

from billing.services.notices import billing_notices_send


def send_billing_mail() -> list[mail.EmailMessage]:
    """Run the queued billing e-mail tasks as the worker would (only those: the full worker,
    ``tests.servers.helpers.run_worker``, would also move servers along), oldest first, and
    return the outbox."""
    queued = DBTaskResult.objects.ready().filter(task_path=billing_notices_send.module_path)
    for result in queued.order_by("enqueued_at"):
        result.claim("tests")
        result.set_successful(
            billing_notices_send.call(*result.args_kwargs["args"], **result.args_kwargs["kwargs"])
        )
    return mail.outbox
