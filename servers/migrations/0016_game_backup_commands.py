"""Copy each game's ``backup_commands`` (servers/game_templates.py) onto the catalogue's games:
the console commands sent around a backup (Minecraft: save-off, save-all, then save-on)."""

from django.db import migrations


def add_backup_commands(apps, schema_editor):
    from servers.game_templates import TEMPLATES

    Game = apps.get_model("servers", "Game")
    for game in Game.objects.filter(slug__in=TEMPLATES):
        if not game.template:
            continue
        game.template = {
            **game.template,
            "backup_commands": TEMPLATES[game.slug]["template"]["backup_commands"],
        }
        game.save(update_fields=["template"])


def remove_backup_commands(apps, schema_editor):
    Game = apps.get_model("servers", "Game")
    for game in Game.objects.all():
        if "backup_commands" in game.template:
            game.template = {k: v for k, v in game.template.items() if k != "backup_commands"}
            game.save(update_fields=["template"])


class Migration(migrations.Migration):
    dependencies = [("servers", "0015_backups")]

    operations = [migrations.RunPython(add_backup_commands, remove_backup_commands)]
