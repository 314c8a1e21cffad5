from django.apps import AppConfig
from django.db import connections
from django.db.models.signals import post_migrate


def _reinstall_count_triggers(sender, using, plan=None, **kwargs):
    """Put the counting triggers back after every migrate (SQLite drops them on table rebuilds).

    When a migration of this run rebuilt a counted table, the counts are recomputed too.
    """
    # Not at the top: apps.py is imported before the models are ready, and counts imports them.
    from servers.counts import install_count_triggers, instance_counts_rebuild

    connection = connections[using]
    if "servers_instancecount" not in connection.introspection.table_names():
        return  # migrated backwards past the counts
    install_count_triggers(connection)
    ran_ours = any(migration.app_label == "servers" for migration, _ in (plan or []))
    if ran_ours and connection.vendor == "sqlite":
        instance_counts_rebuild(connection)


class ServersConfig(AppConfig):
    name = "servers"
    verbose_name = "Game servers"

    def ready(self):
        post_migrate.connect(_reinstall_count_triggers, sender=self)
        # Not at the top, as above: the permissions read the models.
        from accounts.key_cache import extra_register
        from accounts.services import api_key_scopes_register, invitation_details_register
        from events.services import event_consumer_add
        from hosting.api.permissions import extra_scopes_register
        from servers import signals  # noqa: F401 - connects the receivers
        from servers.services.grants import grants_bind_on_join, invitation_grants_described
        from servers.services.permissions import (
            grant_key_scopes,
            key_grants_check,
            key_grants_read,
            principal_grant_scopes,
        )

        # A key whose role falls short of an endpoint's scopes may reach it through grants,
        # which the API key cache keeps with the key.
        extra_scopes_register(principal_grant_scopes)
        extra_register("grants", read=key_grants_read, check=key_grants_check)
        # An invited guest's grants become theirs when they join.
        event_consumer_add(grants_bind_on_join)
        # A guest's invitation e-mail names the servers and bots it opens.
        invitation_details_register(invitation_grants_described)
        # A sub-user may put on a key the scopes their grants need.
        api_key_scopes_register(grant_key_scopes)
        from hosting.dashboard.staff_home import StaffPanel, area_visible, register_staff_panel

        # The staff home's nodes panel: the fleet's health.
        register_staff_panel(
            StaffPanel(
                key="nodes",
                order=30,
                template="staff/nodes_panel.html",
                context=_nodes_panel,
                visible=area_visible("nodes"),
            )
        )


def _nodes_panel(user) -> dict:
    from django.utils import timezone

    from servers.selectors import NODE_QUIET_MINUTES, fleet_health

    return {"fleet": fleet_health(now=timezone.now()), "quiet_minutes": NODE_QUIET_MINUTES}
