"""Once copied the game templates onto the catalogue's games. The catalogue is data now
(``servers/catalogue/<slug>/``), brought into the database by ``manage.py catalogue_sync``
(run after every migrate), which also updates existing installs as a migration could not; this
step is kept, doing nothing, so the migration graph of existing databases stays whole."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("servers", "0010_nodes")]

    operations = [migrations.RunPython(migrations.RunPython.noop, migrations.RunPython.noop)]
