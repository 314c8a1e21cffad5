"""A server holds several allocations (issue 32): the one it had becomes its primary."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Q

import hosting.ids
import servers.models


def name_and_mark_primary(apps, schema_editor):
    Allocation = apps.get_model("servers", "Allocation")
    for allocation in Allocation.objects.filter(public_id=None).only("pk").iterator():
        Allocation.objects.filter(pk=allocation.pk).update(public_id=hosting.ids.new_id("alloc"))
    Allocation.objects.exclude(server=None).update(is_primary=True)


class Migration(migrations.Migration):
    dependencies = [
        ("servers", "0020_schedule_run_under_way"),
    ]

    operations = [
        migrations.AddField(
            model_name="allocation",
            name="public_id",
            field=models.CharField(max_length=64, null=True, editable=False),
        ),
        migrations.AddField(
            model_name="allocation",
            name="is_primary",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="allocation",
            name="note",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name="allocation",
            name="assigned_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="allocation",
            name="server",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="allocations",
                to="servers.server",
            ),
        ),
        migrations.RunPython(name_and_mark_primary, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="allocation",
            name="public_id",
            field=models.CharField(
                default=servers.models.allocation_public_id,
                editable=False,
                max_length=64,
                unique=True,
            ),
        ),
        migrations.AddConstraint(
            model_name="allocation",
            constraint=models.UniqueConstraint(
                condition=Q(is_primary=True), fields=("server",), name="allocation_one_primary"
            ),
        ),
        migrations.AddConstraint(
            model_name="allocation",
            constraint=models.CheckConstraint(
                condition=Q(is_primary=False) | Q(server__isnull=False),
                name="allocation_primary_held",
            ),
        ),
    ]
