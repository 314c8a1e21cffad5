import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.models import OuterRef, Q, Subquery


def backfill_created_by(apps, schema_editor):
    """Take each endpoint's creator from its ``webhook_endpoint.created`` event (or the latest
    URL change, which makes its author the one the endpoint acts as) where the log still has one;
    endpoints without such an event keep no creator and see what a viewer sees."""
    Event = apps.get_model("events", "Event")
    WebhookEndpoint = apps.get_model("webhooks", "WebhookEndpoint")
    author = (
        Event.objects.filter(object_id=OuterRef("pk"), actor_user__isnull=False)
        .filter(
            Q(type="webhook_endpoint.created")
            | Q(type="webhook_endpoint.updated", data__previous_attributes__has_key="url")
        )
        .order_by("-created_at", "-id")
        .values("actor_user_id")[:1]
    )
    WebhookEndpoint.objects.filter(created_by__isnull=True).update(created_by_id=Subquery(author))


class Migration(migrations.Migration):
    dependencies = [
        ("events", "0002_lifecycle"),
        ("webhooks", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="webhookendpoint",
            name="created_by",
            field=models.ForeignKey(
                blank=True,
                help_text="The endpoint receives what this user may see (whoever created it or last changed its URL); unknown or no longer a member: what a viewer may see.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.RunPython(backfill_created_by, migrations.RunPython.noop, elidable=True),
    ]
