from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Customers and access"

    def ready(self) -> None:
        from accounts import signals  # connects the cache invalidation
        from accounts.roles import STAFF_API_AREAS
        from hosting.api.permissions import staff_areas_register

        # The staff API's areas live with the staff roles; the scope check asks them.
        staff_areas_register(STAFF_API_AREAS)
        # Second factors set up, removed, renewed or failed: events (accounts/signals.py).
        signals.connect_factor_events()


class HostingAdminConfig(admin_apps.AdminConfig):
    """Django admin on ``HostingAdminSite``; listed in INSTALLED_APPS instead of the default."""

    default = False  # not a configuration of the accounts app itself
    default_site = "accounts.admin_site.HostingAdminSite"
