import re

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts.models import Account, ApiKey, Invitation, User
from hosting.fields import StorableJSONField
from hosting.ids import PrefixedIdField, new_id
from servers.game_checks import template_problems, variables_problems

slug_validator = RegexValidator(
    r"^[a-z0-9]+(?:-[a-z0-9]+)*$", "Use a lowercase hyphenated slug, like 'minecraft-java'."
)


class ServerStatus(models.TextChoices):
    PROVISIONING = "provisioning", _("Provisioning")
    INSTALLING = "installing", _("Installing")
    INSTALL_FAILED = "install_failed", _("Install failed")
    STOPPED = "stopped", _("Stopped")
    STARTING = "starting", _("Starting")
    RUNNING = "running", _("Running")
    STOPPING = "stopping", _("Stopping")
    SUSPENDED = "suspended", _("Suspended")
    DELETING = "deleting", _("Deleting")


class Region(models.Model):
    """Where instances run; the simulated driver hands out addresses from its pool."""

    slug = models.CharField(max_length=64, primary_key=True, validators=[slug_validator])
    name = models.CharField(max_length=100)
    location = models.CharField(max_length=100)
    ip_addresses = models.JSONField(default=list, help_text="Public addresses of the pool.")
    port_range_start = models.PositiveIntegerField(default=20000)
    port_range_end = models.PositiveIntegerField(default=29999)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name


class Game(models.Model):
    """An entry of the game catalogue that servers are created from.

    ``variables`` defines the settings a server of this game takes: a list of
    ``{"key", "name", "type": "string|integer|boolean|enum", "default", "required", "min",
    "max", "choices", "must_be"}`` (``must_be`` for values such as an accepted EULA).
    """

    slug = models.CharField(max_length=64, primary_key=True, validators=[slug_validator])
    name = models.CharField(max_length=100)
    default_port = models.PositiveIntegerField(
        validators=[MinValueValidator(1), MaxValueValidator(65535)]
    )
    variables = models.JSONField(default=list, blank=True)
    template = models.JSONField(
        default=dict,
        blank=True,
        help_text="How a node agent installs, starts and stops it: agent/PROTOCOL.md's "
        "template, checked by servers.game_checks (README, “The game catalogue” and “Eggs”).",
    )
    # Where an imported game came from (servers.eggs): the egg's format, uuid, author,
    # images and the import's notes; empty for the catalogue's games and staff's own.
    origin = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["name", "slug"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """A game is saved (in admin) only as the agent and the variables' checks will read it,
        never to fail at a customer's first create or start."""
        problems = {}
        if found := variables_problems(self.variables):
            problems["variables"] = found
        keys = {
            definition["key"]
            for definition in (self.variables if isinstance(self.variables, list) else [])
            if isinstance(definition, dict) and isinstance(definition.get("key"), str)
        }
        if found := template_problems(self.template, keys):
            problems["template"] = found
        if problems:
            raise ValidationError(problems)


# A bot's environment variable names.
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# A Discord bot token: printable ASCII without spaces (base64 parts and dots), 20 to 200 long.
DISCORD_TOKEN = re.compile(r"^[\x21-\x7e]{20,200}$")
# What one server or bot may be given (the account's memory quota applies on top).
RESOURCE_LIMITS = {"memory_mb": (256, 65536), "cpu_percent": (10, 800), "disk_mb": (1024, 1048576)}


class NodeIsolation(models.TextChoices):
    """What keeps a node's tenants apart, as its agent says in hello (blank: it did not say)."""

    # Each server and bot in a bubblewrap sandbox of its own: its own uid and its own mount,
    # PID, IPC and network namespaces.
    SANDBOX = "sandbox", "Sandbox per server and bot"
    # The agent runs with its development flag AGENT_ALLOW_UNISOLATED: tenants share one view.
    NONE = "none", "None: tenants are not isolated"


class Node(models.Model):
    """A machine that runs servers and bots, supervised by its node agent (``agent/``).

    The agent authenticates to the control plane with the node token (``hmn_…``), of which only
    ``HMAC-SHA256(pepper, token)`` is kept, as for API keys; the control plane authenticates to
    the agent with short-lived tokens it signs (``servers.services.node_tokens``).
    """

    id = PrefixedIdField(prefix="node")
    name = models.CharField(max_length=100, unique=True)
    region = models.ForeignKey(Region, on_delete=models.PROTECT, related_name="nodes")
    agent_url = models.URLField(
        max_length=200, help_text="Where the control plane reaches the agent, e.g. https://n1:8443"
    )
    memory_mb = models.PositiveIntegerField(help_text="Memory servers and bots may be given.")
    disk_mb = models.PositiveIntegerField(help_text="Disk servers and bots may be given.")
    cpu_percent = models.PositiveIntegerField(
        help_text="CPU in percent of one core (400 = four cores); shown, not enforced."
    )
    maintenance = models.BooleanField(
        default=False, help_text="Nothing new is placed on a node in maintenance."
    )
    token_key_id = models.CharField(max_length=12, unique=True, editable=False)
    token_digest = models.CharField(max_length=64, editable=False)
    token_pepper_id = models.CharField(max_length=32, editable=False)
    agent_version = models.CharField(max_length=32, blank=True, editable=False)
    agent_limits = models.CharField(
        max_length=16, blank=True, editable=False, help_text="How the agent enforces limits."
    )
    agent_isolation = models.CharField(
        max_length=16,
        choices=NodeIsolation.choices,
        blank=True,
        editable=False,
        help_text="How the agent keeps tenants apart; blank when it did not say.",
    )
    boot_id = models.CharField(max_length=64, blank=True, editable=False)
    last_seen_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Where its servers' backups are kept (servers.services.backups.node_backup_storage_set);
    # the S3 secret is kept encrypted (hosting.secrets_box) and never shown again.
    backup_storage = models.CharField(
        max_length=8,
        choices=[("node", "On the node"), ("s3", "S3-compatible store")],
        default="node",
        editable=False,
    )
    s3_endpoint = models.CharField(max_length=200, blank=True, editable=False)
    s3_region = models.CharField(max_length=64, blank=True, editable=False)
    s3_bucket = models.CharField(max_length=63, blank=True, editable=False)
    s3_prefix = models.CharField(max_length=200, blank=True, editable=False)
    s3_access_key_id = models.CharField(max_length=128, blank=True, editable=False)
    s3_secret_encrypted = models.TextField(blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["region", "name"]

    def __str__(self) -> str:
        return self.name

    @property
    def token_hint(self) -> str:
        return f"hmn_{self.token_key_id}…"

    @property
    def isolation_flagged(self) -> bool:
        """Its agent said hello without saying that it sandboxes each tenant."""
        return self.last_seen_at is not None and self.agent_isolation != NodeIsolation.SANDBOX


def allocation_public_id() -> str:
    return new_id("alloc")


class Allocation(models.Model):
    """One ``ip:port`` of a node's pool. A game server holds its primary one (its ``address``,
    taken when it is placed) and as many more as its plan allows (issue 32), each with a note."""

    # The id the customer API names it by (``alloc_…``); the staff API names it by ip:port.
    public_id = models.CharField(
        max_length=64, unique=True, editable=False, default=allocation_public_id
    )
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="allocations")
    ip = models.GenericIPAddressField()
    port = models.PositiveIntegerField(validators=[MinValueValidator(1), MaxValueValidator(65535)])
    server = models.ForeignKey(
        "Server", on_delete=models.SET_NULL, null=True, blank=True, related_name="allocations"
    )
    is_primary = models.BooleanField(default=False)
    note = models.CharField(max_length=200, blank=True)
    # When its server took it: additional allocations are listed (and named ports assigned) in
    # this order.
    assigned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["node", "ip", "port"]
        constraints = [
            models.UniqueConstraint(fields=["node", "ip", "port"], name="allocation_unique"),
            models.UniqueConstraint(
                fields=["server"], condition=Q(is_primary=True), name="allocation_one_primary"
            ),
            models.CheckConstraint(
                condition=Q(is_primary=False) | Q(server__isnull=False),
                name="allocation_primary_held",
            ),
        ]
        indexes = [
            models.Index(fields=["node", "port"], name="allocation_free", condition=Q(server=None)),
        ]

    def __str__(self) -> str:
        return self.address

    @property
    def address(self) -> str:
        return f"[{self.ip}]:{self.port}" if ":" in self.ip else f"{self.ip}:{self.port}"


class Instance(models.Model):
    """What game servers and Discord bots share: owner, place, resources and the lifecycle."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="%(class)ss")
    name = models.CharField(max_length=100)
    region = models.ForeignKey(Region, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(
        max_length=16, choices=ServerStatus.choices, default=ServerStatus.PROVISIONING
    )
    status_reason = models.CharField(
        max_length=500, blank=True, help_text="Why the last failure or crash happened."
    )
    suspended_reason = models.CharField(max_length=500, blank=True)
    address = models.CharField(max_length=64, blank=True)
    node = models.ForeignKey(
        "Node",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="%(class)ss",
        help_text="The node it runs on; none under the simulated driver.",
    )
    auto_restart = models.BooleanField(default=True)
    memory_mb = models.PositiveIntegerField(default=2048)
    cpu_percent = models.PositiveIntegerField(default=100)
    disk_mb = models.PositiveIntegerField(default=10240)
    plan = models.JSONField(
        null=True,
        blank=True,
        editable=False,
        help_text="The plan that binds its resources, set by billing: subscription, product, "
        "memory_mb, cpu_percent, disk_mb (the most a customer may set); null when unbilled.",
    )
    simulation = models.JSONField(
        default=dict,
        blank=True,
        help_text="Instructions for the simulated driver only, e.g. {'fail_install': true}.",
    )
    # Backup retention (servers.services.backups.retention_keeps); null: that rule is not used,
    # all four null: retention is off and only the plan's count limit rotates backups.
    backup_keep_last = models.PositiveSmallIntegerField(null=True, blank=True)
    backup_daily = models.PositiveSmallIntegerField(null=True, blank=True)
    backup_weekly = models.PositiveSmallIntegerField(null=True, blank=True)
    backup_monthly = models.PositiveSmallIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(
        null=True, blank=True, help_text="Set when deletion finished: gone from the API, kept here."
    )

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"

    @property
    def kind(self) -> str:
        return self._meta.model_name


class Server(Instance):
    """A game server that belongs to one account."""

    id = PrefixedIdField(prefix="srv")
    game = models.ForeignKey(Game, on_delete=models.PROTECT, related_name="servers")
    variables = StorableJSONField(default=dict, blank=True)
    start_on_install = models.BooleanField(default=False)
    # The crash policy for a game that answers a query (agent/query.py): restart it when it
    # stops answering while its process runs. Off: "not responding" is only shown and recorded.
    restart_when_not_responding = models.BooleanField(default=False)

    class Meta(Instance.Meta):
        # One per documented filter and ordering of GET /v1/servers, over live rows only.
        indexes = [
            models.Index(
                fields=["account", "-created_at", "-id"],
                name="server_account_created",
                condition=Q(deleted_at=None),
            ),
            models.Index(
                fields=["account", "status", "-created_at", "-id"],
                name="server_account_status",
                condition=Q(deleted_at=None),
            ),
            models.Index(
                fields=["account", "game", "-created_at", "-id"],
                name="server_account_game",
                condition=Q(deleted_at=None),
            ),
            models.Index(
                fields=["account", "name", "-created_at", "-id"],
                name="server_account_name",
                condition=Q(deleted_at=None),
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["address"],
                condition=Q(deleted_at=None) & ~Q(address=""),
                name="server_address_unique_live",
            )
        ]


class BotRuntime(models.TextChoices):
    PYTHON_313 = "python-3.13", "Python 3.13"
    PYTHON_312 = "python-3.12", "Python 3.12"
    NODE_22 = "node-22", "Node.js 22"
    NODE_20 = "node-20", "Node.js 20"
    BUN_1 = "bun-1", "Bun 1"
    DENO_2 = "deno-2", "Deno 2"
    JAVA_21 = "java-21", "Java 21"
    GO_123 = "go-1.23", "Go 1.23"


class Bot(Instance):
    """A Discord bot process. Its Discord token is stored encrypted and never shown again."""

    id = PrefixedIdField(prefix="bot")
    runtime = models.CharField(max_length=16, choices=BotRuntime.choices)
    start_command = models.CharField(max_length=500)
    environment = StorableJSONField(default=dict, blank=True)
    token_encrypted = models.TextField(editable=False)
    token_last4 = models.CharField(max_length=4, editable=False)
    source_type = models.CharField(
        max_length=8,
        blank=True,
        choices=[("git", "Git repository"), ("archive", "Archive"), ("upload", "Uploaded archive")],
    )
    source_archive = models.FileField(
        upload_to="bot-sources/%Y/%m/",
        blank=True,
        help_text="An uploaded .tar.gz or .zip of the bot's code (source_type upload).",
    )
    source_url = models.CharField(
        max_length=500, blank=True, help_text="Where a node fetches the bot's code at install."
    )
    source_ref = models.CharField(max_length=100, blank=True, help_text="Git branch or tag.")

    class Meta(Instance.Meta):
        indexes = [
            models.Index(fields=["account", "-created_at", "-id"], name="bot_account_created"),
            models.Index(fields=["account", "status", "-created_at"], name="bot_account_status"),
        ]


# A row of one server or one bot: ``server`` or ``bot`` set, never both (a check constraint
# with this condition), and what it belongs to read through ``OfOneInstance``.
ONE_INSTANCE = Q(server__isnull=False, bot__isnull=True) | Q(server__isnull=True, bot__isnull=False)


class OfOneInstance:
    """The server or bot a row with ``server`` and ``bot`` foreign keys belongs to."""

    server_id: str | None
    bot_id: str | None

    @property
    def instance(self) -> "Server | Bot":
        return self.server if self.server_id else self.bot  # type: ignore[attr-defined]

    @property
    def instance_id(self) -> str:
        return self.server_id or self.bot_id or ""


class ActionStatus(models.TextChoices):
    PENDING = "pending", _("Pending")
    RUNNING = "running", _("Running")
    SUCCEEDED = "succeeded", _("Succeeded")
    FAILED = "failed", _("Failed")


ACTIVE_ACTION = Q(status__in=[ActionStatus.PENDING, ActionStatus.RUNNING])


class Action(models.Model):
    """One asynchronous operation on a server or a bot, carried out by the worker.

    The database itself allows only one active action (other than ``kill``) per target, so two
    simultaneous requests can never both be accepted.
    """

    id = PrefixedIdField(prefix="act")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="actions")
    server = models.ForeignKey(
        Server, on_delete=models.CASCADE, null=True, blank=True, related_name="actions"
    )
    bot = models.ForeignKey(
        Bot, on_delete=models.CASCADE, null=True, blank=True, related_name="actions"
    )
    type = models.CharField(max_length=16)
    status = models.CharField(
        max_length=16, choices=ActionStatus.choices, default=ActionStatus.PENDING
    )
    error = models.CharField(max_length=500, blank=True)
    requested_by_user = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    requested_by_key = models.ForeignKey(
        ApiKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    task_id = models.CharField(
        max_length=64, blank=True, help_text="The queued task that carries this action out."
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "heartbeat_at"], name="action_status_heartbeat"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=ONE_INSTANCE,
                name="action_has_one_target",
            ),
            models.UniqueConstraint(
                fields=["server"],
                condition=ACTIVE_ACTION & ~Q(type="kill") & Q(server__isnull=False),
                name="action_one_active_per_server",
            ),
            models.UniqueConstraint(
                fields=["bot"],
                condition=ACTIVE_ACTION & ~Q(type="kill") & Q(bot__isnull=False),
                name="action_one_active_per_bot",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.target_id} ({self.id})"

    @property
    def target(self) -> Server | Bot:
        return self.server if self.server_id else self.bot

    @property
    def target_id(self) -> str:
        return self.server_id or self.bot_id


class BackupStatus(models.TextChoices):
    RUNNING = "running", _("Running")
    COMPLETED = "completed", _("Completed")
    FAILED = "failed", _("Failed")


class BackupStorage(models.TextChoices):
    NODE = "node", _("On the node")
    S3 = "s3", _("S3-compatible store")


class Backup(OfOneInstance, models.Model):
    """An archive of a server's or bot's folder, made by its node's agent and kept on the node
    or in an S3-compatible store (``storage_kind``, the node's setting when it was made).

    ``restore_status`` is the last restore's (blank: never restored). A deleted backup's row is
    removed once its node confirmed the archive is gone; its event keeps what it was.
    """

    id = PrefixedIdField(prefix="bkp")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="backups")
    server = models.ForeignKey(
        Server, on_delete=models.CASCADE, null=True, blank=True, related_name="backups"
    )
    bot = models.ForeignKey(
        Bot, on_delete=models.CASCADE, null=True, blank=True, related_name="backups"
    )
    node = models.ForeignKey(
        Node, on_delete=models.SET_NULL, null=True, blank=True, related_name="backups"
    )
    name = models.CharField(max_length=100)
    status = models.CharField(
        max_length=16, choices=BackupStatus.choices, default=BackupStatus.RUNNING
    )
    size = models.BigIntegerField(null=True, blank=True, help_text="Bytes of the archive.")
    checksum = models.CharField(max_length=80, blank=True, help_text="sha256:<64 hex>")
    files = models.PositiveIntegerField(null=True, blank=True, help_text="Members archived.")
    locked = models.BooleanField(default=False)
    ignore = models.JSONField(default=list, blank=True, help_text="The patterns sent.")
    storage_kind = models.CharField(max_length=8, choices=BackupStorage.choices)
    error = models.CharField(max_length=500, blank=True)
    restore_status = models.CharField(
        max_length=16, blank=True, choices=BackupStatus.choices, default=""
    )
    restore_error = models.CharField(max_length=500, blank=True)
    restore_started_at = models.DateTimeField(null=True, blank=True)
    restored_at = models.DateTimeField(null=True, blank=True)
    created_by_user = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_by_key = models.ForeignKey(
        ApiKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["server", "-created_at", "-id"], name="backup_server_created"),
            models.Index(fields=["bot", "-created_at", "-id"], name="backup_bot_created"),
            models.Index(fields=["status", "created_at"], name="backup_status_created"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=ONE_INSTANCE,
                name="backup_has_one_target",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"


class InstanceCount(models.Model):
    """How many live servers or bots an account has in a status, created in a month, kept by
    database triggers.

    Lists answer their ``total`` from these rows instead of counting the account's servers, so
    the cost does not grow with the account. Triggers (migration 0007), not services, write them:
    every way of changing a server row counts, including the admin, factories and ``COPY``.
    Each change appends a +1 / -1 row (appending takes no lock another change waits for, so
    concurrent status changes can neither block nor deadlock on a shared counter); the total is
    the sum, and ``instance_counts_compact`` folds the rows of each (account, kind, status) into
    one, from the housekeeping loop.
    """

    account_id = models.CharField(max_length=64)
    kind = models.CharField(max_length=8)  # "server" or "bot"
    status = models.CharField(max_length=16, choices=ServerStatus.choices)
    month = models.DateField(
        help_text="First day of the month the instances were created in (UTC)."
    )
    delta = models.BigIntegerField()

    class Meta:
        indexes = [
            # month and delta as key columns: sums and per-month sums come from the index alone.
            models.Index(
                fields=["account_id", "kind", "status", "month", "delta"],
                name="instancecount_lookup",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.account_id} {self.kind} {self.status} {self.month:%Y-%m} {self.delta:+d}"


class ScheduleTaskAction(models.TextChoices):
    POWER = "power", _("Power action")
    COMMAND = "command", _("Console command")
    BACKUP = "backup", _("Backup")


class Schedule(OfOneInstance, models.Model):
    """Tasks that run on their own for a server or bot, at the ticks of a cron line read in a
    time zone (``servers.services.schedules``).

    ``next_run_at`` is the next tick in UTC, kept as the schedule changes and as the
    dispatcher takes its ticks, so that "which schedules are due" reads one index; it is null
    while the schedule is paused.
    """

    id = PrefixedIdField(prefix="sch")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="schedules")
    server = models.ForeignKey(
        Server, on_delete=models.CASCADE, null=True, blank=True, related_name="schedules"
    )
    bot = models.ForeignKey(
        Bot, on_delete=models.CASCADE, null=True, blank=True, related_name="schedules"
    )
    name = models.CharField(max_length=100)
    cron = models.CharField(max_length=100, help_text="Five fields: minute hour day month weekday.")
    time_zone = models.CharField(max_length=64, default="UTC", help_text="An IANA time zone.")
    active = models.BooleanField(default=True)
    only_when_running = models.BooleanField(
        default=False, help_text="A tick while it is not running is recorded as skipped."
    )
    next_run_at = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["server", "-created_at", "-id"], name="schedule_server_created"),
            models.Index(fields=["bot", "-created_at", "-id"], name="schedule_bot_created"),
            models.Index(fields=["next_run_at"], condition=Q(active=True), name="schedule_due"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=ONE_INSTANCE,
                name="schedule_has_one_target",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"


class ScheduleTask(models.Model):
    """One step of a schedule, in ``position`` order, ``offset_seconds`` after its run began.

    ``payload``: the power action (start, stop, restart, kill), the console command, or the
    backup's name (blank: the default name)."""

    id = PrefixedIdField(prefix="task")
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="tasks")
    position = models.PositiveSmallIntegerField()
    action = models.CharField(max_length=16, choices=ScheduleTaskAction.choices)
    payload = models.CharField(max_length=4096, blank=True)
    offset_seconds = models.PositiveIntegerField(default=0)
    continue_on_failure = models.BooleanField(default=False)

    class Meta:
        ordering = ["schedule", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["schedule", "position"], name="schedule_task_position_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.position}. {self.action} {self.payload}"


class ScheduleRunStatus(models.TextChoices):
    RUNNING = "running", _("Running")
    SUCCEEDED = "succeeded", _("Succeeded")
    FAILED = "failed", _("Failed")
    SKIPPED = "skipped", _("Skipped")


class ScheduleRunTrigger(models.TextChoices):
    TICK = "tick", _("On time")
    LATE = "late", _("Late (a missed tick)")
    MANUAL = "manual", _("Run now")


class ScheduleRun(models.Model):
    """One run of a schedule: of one tick (at most one row per schedule and tick, the database's
    guarantee that no tick runs twice whatever the workers do) or asked for ("run now", no tick).

    ``tasks`` is the schedule's tasks as they were when the run began, each with its outcome
    (``status``, ``error``, ``started_at``, ``completed_at`` and the ``action_id`` or
    ``backup_id`` it made), so a schedule edited meanwhile does not change a run under way.
    """

    id = PrefixedIdField(prefix="schr")
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="runs")
    tick = models.DateTimeField(null=True, blank=True)
    trigger = models.CharField(max_length=8, choices=ScheduleRunTrigger.choices)
    status = models.CharField(
        max_length=16, choices=ScheduleRunStatus.choices, default=ScheduleRunStatus.RUNNING
    )
    reason = models.CharField(max_length=500, blank=True, help_text="Why it failed or skipped.")
    tasks = models.JSONField(default=list, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [
            models.Index(fields=["schedule", "-started_at", "-id"], name="schedule_run_started"),
            # The recovery pass's runs under way (schedule_steps_recover).
            models.Index(
                fields=["started_at"],
                condition=Q(status="running"),
                name="schedule_run_under_way",
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["schedule", "tick"],
                condition=Q(tick__isnull=False),
                name="schedule_run_once_per_tick",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.schedule_id} {self.tick or 'now'} ({self.id})"


class ServerGrant(OfOneInstance, models.Model):
    """What one person may do on one server or bot beyond their account role (a sub-user).

    ``permissions`` are names of ``servers.permissions.PERMISSIONS``. The person is a member of
    the account (``user``), or someone invited by e-mail for this server alone
    (``invitation``, whose acceptance makes them a guest of the account and fills ``user``).
    """

    id = PrefixedIdField(prefix="grant")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="server_grants")
    server = models.ForeignKey(
        Server, on_delete=models.CASCADE, null=True, blank=True, related_name="grants"
    )
    bot = models.ForeignKey(
        Bot, on_delete=models.CASCADE, null=True, blank=True, related_name="grants"
    )
    user = models.ForeignKey(
        User, on_delete=models.CASCADE, null=True, blank=True, related_name="server_grants"
    )
    invitation = models.ForeignKey(
        Invitation, on_delete=models.CASCADE, null=True, blank=True, related_name="server_grants"
    )
    permissions = models.JSONField(default=list)
    created_by = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "account"], name="servergrant_user_account")]
        constraints = [
            models.CheckConstraint(
                condition=ONE_INSTANCE,
                name="servergrant_has_one_target",
            ),
            models.CheckConstraint(
                condition=Q(user__isnull=False) | Q(invitation__isnull=False),
                name="servergrant_has_a_person",
            ),
            models.UniqueConstraint(fields=["server", "user"], name="servergrant_server_user"),
            models.UniqueConstraint(fields=["bot", "user"], name="servergrant_bot_user"),
        ]

    def __str__(self) -> str:
        return f"{self.id} on {self.instance_id}"
