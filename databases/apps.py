from django.apps import AppConfig


class DatabasesConfig(AppConfig):
    name = "databases"
    verbose_name = "Databases of servers and bots"
