"""Accounts that already run servers or bots without a plan keep them: each account's unbilled
allowance is set to what its plan-less servers and bots use now (never lowered). New accounts
start with ``NEW_ACCOUNT_UNBILLED_ALLOWANCE``."""

from django.db import migrations
from django.db.models import Count, Sum

FIELDS = ("memory_mb", "cpu_percent", "disk_mb")


def keep_what_runs(apps, schema_editor):
    Account = apps.get_model("accounts", "Account")
    used: dict[str, dict[str, int]] = {}
    for name in ("Server", "Bot"):
        model = apps.get_model("servers", name)
        rows = (
            model.objects.filter(deleted_at=None, plan__isnull=True)
            .values("account_id")
            .annotate(instances=Count("id"), **{field: Sum(field) for field in FIELDS})
        )
        for row in rows:
            total = used.setdefault(row["account_id"], dict.fromkeys(("instances", *FIELDS), 0))
            for key in total:
                total[key] += row[key] or 0
    for account in Account.objects.filter(pk__in=used):
        for key, value in used[account.pk].items():
            field = f"unbilled_{key}"
            setattr(account, field, max(getattr(account, field), value))
        account.save(update_fields=[f"unbilled_{key}" for key in ("instances", *FIELDS)])


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0005_unbilled_allowance"),
        # After the plans were written onto the servers and bots of subscriptions.
        ("billing", "0005_backfill_instance_plan"),
    ]

    operations = [migrations.RunPython(keep_what_runs, migrations.RunPython.noop)]
