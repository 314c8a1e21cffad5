"""Once copied each game's ``backup_commands`` onto the catalogue's games. The catalogue is data
now (``servers/catalogue/<slug>/game.toml``), brought into the database by ``manage.py
catalogue_sync``; this step is kept, doing nothing, so the migration graph stays whole."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("servers", "0015_backups")]

    operations = [migrations.RunPython(migrations.RunPython.noop, migrations.RunPython.noop)]
