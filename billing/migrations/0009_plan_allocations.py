from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0008_plan_schedules_databases"),
    ]

    operations = [
        migrations.AddField(
            model_name="product",
            name="allocation_limit",
            field=models.PositiveIntegerField(default=1),
        ),
    ]
