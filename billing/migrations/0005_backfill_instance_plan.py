"""Servers and bots made from an order before plans bound resources get their plan's bounds
(``servers.Instance.plan``, as ``billing.services.fulfilment.plan_bounds`` sets it)."""

from django.db import migrations


def backfill(apps, schema_editor):
    Subscription = apps.get_model("billing", "Subscription")
    live = Subscription.objects.exclude(status="canceled").select_related("price__product")
    for subscription in live.iterator():
        instance = subscription.server or subscription.bot
        if instance is None or instance.plan is not None:
            continue
        product = subscription.price.product
        instance.plan = {
            "subscription": subscription.id,
            "product": product.name,
            "memory_mb": product.memory_mb,
            "cpu_percent": product.cpu_percent,
            "disk_mb": product.disk_mb,
        }
        instance.save(update_fields=["plan"])


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0004_coupon_directly_redeemable"),
        ("servers", "0014_instance_plan"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
