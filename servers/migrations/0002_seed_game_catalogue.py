"""Seed the game catalogue with real games and the port their dedicated servers listen on."""

from django.db import migrations

GAMES = [
    ("minecraft-java", "Minecraft: Java Edition", 25565),
    ("minecraft-bedrock", "Minecraft: Bedrock Edition", 19132),
    ("rust", "Rust", 28015),
    ("valheim", "Valheim", 2456),
    ("counter-strike-2", "Counter-Strike 2", 27015),
    ("terraria", "Terraria", 7777),
    ("ark-survival-evolved", "ARK: Survival Evolved", 7777),
    ("ark-survival-ascended", "ARK: Survival Ascended", 7777),
    ("palworld", "Palworld", 8211),
    ("garrys-mod", "Garry's Mod", 27015),
    ("factorio", "Factorio", 34197),
    ("7-days-to-die", "7 Days to Die", 26900),
    ("project-zomboid", "Project Zomboid", 16261),
    ("satisfactory", "Satisfactory", 7777),
    ("enshrouded", "Enshrouded", 15636),
    ("team-fortress-2", "Team Fortress 2", 27015),
    ("v-rising", "V Rising", 9876),
    ("conan-exiles", "Conan Exiles", 7777),
    ("dont-starve-together", "Don't Starve Together", 10999),
    ("unturned", "Unturned", 27015),
    ("space-engineers", "Space Engineers", 27016),
    ("arma-3", "Arma 3", 2302),
    ("dayz", "DayZ", 2302),
    ("starbound", "Starbound", 21025),
]


def add_games(apps, schema_editor):
    Game = apps.get_model("servers", "Game")
    for slug, name, port in GAMES:
        Game.objects.update_or_create(slug=slug, defaults={"name": name, "default_port": port})


def remove_games(apps, schema_editor):
    apps.get_model("servers", "Game").objects.filter(slug__in=[g[0] for g in GAMES]).delete()


class Migration(migrations.Migration):
    dependencies = [("servers", "0001_initial")]

    operations = [migrations.RunPython(add_games, remove_games)]
