from django.apps import AppConfig


class HostingConfig(AppConfig):
    """The project package as an app: only for the project's own management commands."""

    name = "hosting"
    verbose_name = "Hosting Management Service"
