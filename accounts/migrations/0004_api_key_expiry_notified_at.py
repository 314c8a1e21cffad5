"""Keys remember their expiry notice themselves, instead of the event log being searched for it
(which also forgot it once the event was pruned)."""

from django.db import migrations, models


def from_the_event_log(apps, schema_editor):
    ApiKey = apps.get_model("accounts", "ApiKey")
    Event = apps.get_model("events", "Event")
    notices = Event.objects.filter(type="api_key.expiring").values_list("object_id", "created_at")
    for key_id, created_at in notices.iterator():
        ApiKey.objects.filter(pk=key_id, expiry_notified_at=None).update(
            expiry_notified_at=created_at
        )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0003_lifecycle"),
        ("events", "0003_storable_text"),
    ]

    operations = [
        migrations.AddField(
            model_name="apikey",
            name="expiry_notified_at",
            field=models.DateTimeField(
                blank=True,
                editable=False,
                help_text="When api_key.expiring was recorded.",
                null=True,
            ),
        ),
        migrations.RunPython(from_the_event_log, migrations.RunPython.noop),
    ]
