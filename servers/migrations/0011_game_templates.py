"""Copy the game templates (servers/game_templates.py) onto the catalogue's games: how a node
agent installs, starts and stops each, and the variables that needs.

The test workload is not added here: it is for tests and the local demo node
(``seed_local_node``), not a game customers order.
"""

from django.db import migrations


def add_templates(apps, schema_editor):
    from servers.game_templates import TEMPLATES

    Game = apps.get_model("servers", "Game")
    for game in Game.objects.filter(slug__in=TEMPLATES):
        entry = TEMPLATES[game.slug]
        game.template = entry["template"]
        game.variables = entry["variables"]
        game.save(update_fields=["template", "variables"])


def remove_templates(apps, schema_editor):
    apps.get_model("servers", "Game").objects.update(template={})


class Migration(migrations.Migration):
    dependencies = [("servers", "0010_nodes")]

    operations = [migrations.RunPython(add_templates, remove_templates)]
