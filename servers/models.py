from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone

from accounts.models import Account
from hosting.ids import PrefixedIdField

slug_validator = RegexValidator(
    r"^[a-z0-9]+(?:-[a-z0-9]+)*$", "Use a lowercase hyphenated slug, like 'minecraft-java'."
)


class ServerStatus(models.TextChoices):
    PROVISIONING = "provisioning", "Provisioning"
    INSTALLING = "installing", "Installing"
    INSTALL_FAILED = "install_failed", "Install failed"
    STOPPED = "stopped", "Stopped"
    STARTING = "starting", "Starting"
    RUNNING = "running", "Running"
    STOPPING = "stopping", "Stopping"
    SUSPENDED = "suspended", "Suspended"
    DELETING = "deleting", "Deleting"


class Game(models.Model):
    """An entry of the game catalogue that servers are created from."""

    slug = models.CharField(max_length=64, primary_key=True, validators=[slug_validator])
    name = models.CharField(max_length=100)
    default_port = models.PositiveIntegerField(
        validators=[MinValueValidator(1), MaxValueValidator(65535)]
    )

    class Meta:
        ordering = ["name", "slug"]

    def __str__(self) -> str:
        return self.name


class Server(models.Model):
    """A game server that belongs to one account."""

    id = PrefixedIdField(prefix="srv")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="servers")
    name = models.CharField(max_length=100)
    game = models.ForeignKey(Game, on_delete=models.PROTECT, related_name="servers")
    status = models.CharField(
        max_length=16, choices=ServerStatus.choices, default=ServerStatus.PROVISIONING
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["account", "-created_at", "-id"], name="server_account_created"),
            models.Index(fields=["account", "status", "-created_at"], name="server_account_status"),
            models.Index(fields=["account", "game", "-created_at"], name="server_account_game"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"
