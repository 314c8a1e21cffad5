"""Queued work keeps running after the task moved from webhooks/tasks.py into the services.

A task row names its function by import path; rows written before the move name the old one.
"""

from django.db import migrations

MOVES = {"webhooks.tasks.deliver_webhook": "webhooks.services.delivery.deliver_webhook"}


def forwards(apps, schema_editor):
    DBTaskResult = apps.get_model("django_tasks_database", "DBTaskResult")
    for old, new in MOVES.items():
        DBTaskResult.objects.filter(task_path=old).update(task_path=new)


def backwards(apps, schema_editor):
    DBTaskResult = apps.get_model("django_tasks_database", "DBTaskResult")
    for old, new in MOVES.items():
        DBTaskResult.objects.filter(task_path=new).update(task_path=old)


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0003_alter_webhookdelivery_options"),
        ("django_tasks_database", "0021_conditional_partial_index_ordering"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
