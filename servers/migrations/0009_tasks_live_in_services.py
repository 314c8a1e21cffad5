"""Queued work keeps running after the task moved from servers/tasks.py into the services.

A task row names its function by import path; rows written before the move name the old one.
"""

from django.db import migrations

MOVES = {"servers.tasks.run_action": "servers.services.actions.run_action"}


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
        ("servers", "0008_storable_text"),
        ("django_tasks_database", "0021_conditional_partial_index_ordering"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
