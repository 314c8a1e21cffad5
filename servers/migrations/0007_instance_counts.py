from django.db import migrations, models


def install(apps, schema_editor):
    from servers.counts import install_count_triggers, instance_counts_rebuild

    install_count_triggers(schema_editor.connection)
    instance_counts_rebuild(schema_editor.connection)


def uninstall(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        for table in ("servers_server", "servers_bot"):
            if connection.vendor == "postgresql":
                cursor.execute(f"DROP TRIGGER IF EXISTS {table}_count ON {table}")
            else:
                for event in ("insert", "delete", "update"):
                    cursor.execute(f"DROP TRIGGER IF EXISTS {table}_count_{event}")
        if connection.vendor == "postgresql":
            cursor.execute("DROP FUNCTION IF EXISTS servers_count_instances()")


class Migration(migrations.Migration):
    dependencies = [
        ("servers", "0006_list_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="InstanceCount",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("account_id", models.CharField(max_length=64)),
                ("kind", models.CharField(max_length=8)),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("provisioning", "Provisioning"),
                            ("installing", "Installing"),
                            ("install_failed", "Install failed"),
                            ("stopped", "Stopped"),
                            ("starting", "Starting"),
                            ("running", "Running"),
                            ("stopping", "Stopping"),
                            ("suspended", "Suspended"),
                            ("deleting", "Deleting"),
                        ],
                        max_length=16,
                    ),
                ),
                (
                    "month",
                    models.DateField(
                        help_text="First day of the month the instances were created in (UTC)."
                    ),
                ),
                ("delta", models.BigIntegerField()),
            ],
            options={
                "indexes": [
                    models.Index(
                        fields=["account_id", "kind", "status", "month", "delta"],
                        name="instancecount_lookup",
                    )
                ],
            },
        ),
        migrations.RunPython(install, uninstall),
    ]
