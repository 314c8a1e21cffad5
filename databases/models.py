"""Database hosts (staff's) and the databases customers create on them for their servers and
bots (issue 31, "Databases per server"). An app of its own above ``servers``: it reads the
servers and bots it belongs to, and the servers app knows nothing of it."""

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Account, ApiKey, User
from hosting.ids import PrefixedIdField
from servers.models import ONE_INSTANCE, Bot, Node, OfOneInstance, Region, Server


class DatabaseEngine(models.TextChoices):
    MARIADB = "mariadb", "MariaDB / MySQL"
    POSTGRESQL = "postgresql", "PostgreSQL"


class DatabaseHost(models.Model):
    """A MariaDB/MySQL or PostgreSQL server, registered by staff, where customers' databases
    are created (``servers.services.databases``). The service signs in as ``admin_user``, whose
    password is kept encrypted (``hosting.secrets_box``) and never shown again; customers
    connect to ``public_host`` (the admin address ``host`` when blank). With no region it serves
    every region; with nodes, only the servers and bots on them."""

    id = PrefixedIdField(prefix="dbh")
    engine = models.CharField(max_length=16, choices=DatabaseEngine.choices)
    name = models.CharField(max_length=100, unique=True)
    host = models.CharField(max_length=255, help_text="The address the service connects to.")
    port = models.PositiveIntegerField(validators=[MinValueValidator(1), MaxValueValidator(65535)])
    public_host = models.CharField(
        max_length=255, blank=True, help_text="The address customers connect to; blank: host."
    )
    admin_user = models.CharField(max_length=100)
    admin_password_encrypted = models.TextField(blank=True, editable=False)
    region = models.ForeignKey(
        Region, on_delete=models.PROTECT, null=True, blank=True, related_name="database_hosts"
    )
    nodes = models.ManyToManyField(Node, blank=True, related_name="database_hosts")
    max_databases = models.PositiveIntegerField(default=1000)
    active = models.BooleanField(default=True, help_text="New databases are created on it.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_engine_display()})"

    @property
    def address(self) -> str:
        return self.public_host or self.host


class ServerDatabase(OfOneInstance, models.Model):
    """A database of a server or bot on a database host, with its own user limited to it.

    ``db_name`` and ``username`` are generated (the instance's short id first) and unique on
    their host; the user's password is shown once, when created or rotated, and kept nowhere
    here: the host alone holds its hash. ``remote`` is the MariaDB user's host part (``%``:
    anywhere). A row is removed once its host dropped the database and the user.
    """

    id = PrefixedIdField(prefix="db")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="databases")
    server = models.ForeignKey(
        Server, on_delete=models.CASCADE, null=True, blank=True, related_name="databases"
    )
    bot = models.ForeignKey(
        Bot, on_delete=models.CASCADE, null=True, blank=True, related_name="databases"
    )
    host = models.ForeignKey(DatabaseHost, on_delete=models.PROTECT, related_name="databases")
    name = models.CharField(max_length=20, help_text="The customer's name for it.")
    db_name = models.CharField(max_length=64)
    username = models.CharField(max_length=32)
    remote = models.CharField(max_length=60, default="%")
    created_by_user = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_by_key = models.ForeignKey(
        ApiKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    password_rotated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["server", "-created_at", "-id"], name="database_server_created"),
            models.Index(fields=["bot", "-created_at", "-id"], name="database_bot_created"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=ONE_INSTANCE,
                name="database_has_one_target",
            ),
            models.UniqueConstraint(fields=["host", "db_name"], name="database_name_unique"),
            models.UniqueConstraint(fields=["host", "username"], name="database_user_unique"),
            models.UniqueConstraint(
                fields=["server", "name"],
                condition=Q(server__isnull=False),
                name="database_server_name",
            ),
            models.UniqueConstraint(
                fields=["bot", "name"], condition=Q(bot__isnull=False), name="database_bot_name"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.db_name} ({self.id})"
