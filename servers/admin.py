from django.contrib import admin

from servers.models import Game, Server


@admin.register(Game)
class GameAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "default_port"]
    search_fields = ["name", "slug"]


@admin.register(Server)
class ServerAdmin(admin.ModelAdmin):
    list_display = ["name", "id", "account", "game", "status", "created_at"]
    list_filter = ["status", "game", "created_at"]
    search_fields = ["name", "id", "account__name", "account__id"]
    list_select_related = ["account", "game"]
    autocomplete_fields = ["account"]
    readonly_fields = ["id", "created_at", "updated_at"]
