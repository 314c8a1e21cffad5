import operator
from collections.abc import Iterable
from datetime import datetime
from functools import reduce

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy

from accounts.roles import (
    STAFF_ROLE_RIGHTS,
    Role,
    StaffRole,
    staff_role_can_see,
    staff_role_has_module_perms,
    staff_role_has_perm,
    staff_role_works_desk,
)
from hosting.ids import PrefixedIdField


class UserManager(BaseUserManager):
    use_in_migrations = True

    def _create_user(self, email: str, password: str | None, **extra):
        if not email:
            raise ValueError("A user needs an e-mail address.")
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_user(self, email: str, password: str | None = None, **extra):
        extra.setdefault("is_staff", False)
        extra.setdefault("is_superuser", False)
        return self._create_user(email, password, **extra)

    def create_superuser(self, email: str, password: str | None = None, **extra):
        extra["is_staff"] = True
        extra["is_superuser"] = True
        return self._create_user(email, password, **extra)

    def get_by_natural_key(self, username):
        return self.get(email__iexact=username)


class User(AbstractBaseUser, PermissionsMixin):
    """A person who signs in with an e-mail address; staff users run the hosting company."""

    id = PrefixedIdField(prefix="usr")
    email = models.EmailField(unique=True)
    name = models.CharField(max_length=150, blank=True)
    is_staff = models.BooleanField(
        default=False, help_text="Hosting company staff: may use Django admin and staff scopes."
    )
    staff_role = models.CharField(
        max_length=16,
        choices=StaffRole.choices,
        blank=True,
        help_text="What a staff member's job lets them do (accounts/roles.py); superusers are "
        "administrators whatever it says, and it means nothing for users who are not staff.",
    )
    is_active = models.BooleanField(
        default=True, help_text="Inactive users cannot sign in and their API keys stop working."
    )
    date_joined = models.DateTimeField(default=timezone.now)
    # The dashboard's and e-mails' language (hosting/i18n.py); blank: the browser's, else English.
    language = models.CharField(
        max_length=8,
        choices=settings.LANGUAGES,
        blank=True,
        help_text="The language of the dashboard and e-mails; blank: the browser's.",
    )
    # SFTP (agent/PROTOCOL.md "SFTP"): the <login> of <login>.<server short id>, given once
    # from the e-mail's local part when first needed (accounts.services.sftp), and a password
    # for SFTP only, kept as Django keeps passwords (a hash), blank when none is set.
    sftp_login = models.CharField(
        max_length=32,
        unique=True,
        null=True,
        blank=True,
        help_text="The user's SFTP sign-in name: lowercase letters, digits, '-', '_' and '.'.",
    )
    sftp_password = models.CharField(max_length=128, blank=True, editable=False)
    sftp_password_set_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []

    class Meta:
        ordering = ["email"]

    def __str__(self) -> str:
        return self.email

    @property
    def has_sftp_password(self) -> bool:
        return bool(self.sftp_password)

    @property
    def staff_role_now(self) -> str | None:
        """The staff role this user acts in (``accounts/roles.py``): ``None`` unless active staff,
        administrator for superusers, ``""`` for staff without a role."""
        if not (self.is_active and self.is_staff):
            return None
        if self.is_superuser:
            return StaffRole.ADMINISTRATOR
        return self.staff_role

    @property
    def works_desk(self) -> bool:
        """Does the staff role answer tickets at the desk (its departments decide which)?"""
        return staff_role_works_desk(self.staff_role_now)

    def staff_can_see(self, area: str) -> bool:
        """May this user read a staff area (``StaffArea``): its reports and staff pages?"""
        return staff_role_can_see(self.staff_role_now, area)

    def has_perm(self, perm: str, obj=None) -> bool:
        """Django's permissions (superusers, groups) and those of the staff role's table."""
        return super().has_perm(perm, obj) or staff_role_has_perm(self.staff_role_now, perm)

    def has_module_perms(self, app_label: str) -> bool:
        return super().has_module_perms(app_label) or staff_role_has_module_perms(
            self.staff_role_now, app_label
        )


def desk_staff_q() -> Q:
    """The users who answer tickets at the desk, as a query: active staff whose role works the
    desk (``User.works_desk``), superusers always."""
    roles = [role for role, rights in STAFF_ROLE_RIGHTS.items() if rights.works_desk]
    return Q(is_active=True, is_staff=True) & (Q(is_superuser=True) | Q(staff_role__in=roles))


class Account(models.Model):
    """A customer of the hosting company: owns servers, bots, keys and bills."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        SUSPENDED = "suspended", "Suspended"

    id = PrefixedIdField(prefix="acct")
    name = models.CharField(max_length=150)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    suspended_at = models.DateTimeField(null=True, blank=True)
    suspended_reason = models.CharField(max_length=500, blank=True)
    rate_limit_per_minute = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Requests per minute for each API key of this account; empty uses the default.",
    )
    max_api_keys = models.PositiveIntegerField(
        default=25, help_text="Most API keys (active or pending revocation) the account may hold."
    )
    max_servers = models.PositiveIntegerField(default=10, help_text="Most game servers.")
    max_bots = models.PositiveIntegerField(default=10, help_text="Most Discord bots.")
    max_memory_mb = models.PositiveIntegerField(
        default=32768, help_text="Memory of all servers and bots together, in MB."
    )
    # What the account may run without a plan (servers and bots not ordered through billing):
    # for hosts that bill elsewhere, staff's own servers and free tiers. Zero: all need a plan.
    unbilled_instances = models.PositiveIntegerField(
        default=0, help_text="Servers and bots together that may run without a plan."
    )
    unbilled_memory_mb = models.PositiveIntegerField(
        default=0, help_text="Memory of all plan-less servers and bots together, in MB."
    )
    unbilled_cpu_percent = models.PositiveIntegerField(
        default=0, help_text="CPU of all plan-less servers and bots together, in % of one core."
    )
    unbilled_disk_mb = models.PositiveIntegerField(
        default=0, help_text="Disk of all plan-less servers and bots together, in MB."
    )
    require_second_factor = models.BooleanField(
        default=False,
        help_text="Every member signs in with a second factor (the owners decide).",
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    members = models.ManyToManyField(User, through="Membership", related_name="accounts")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"

    @property
    def is_suspended(self) -> bool:
        return self.status == self.Status.SUSPENDED


class Membership(models.Model):
    """A user's place in an account, with the role that bounds what they and their keys may do."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["account", "user"], name="membership_unique_user")
        ]
        ordering = ["account", "created_at"]

    def __str__(self) -> str:
        return f"{self.user} in {self.account.name} as {self.role}"


def _now(now: datetime | None) -> datetime:
    return now or timezone.now()


class StatusQuerySet(models.QuerySet):
    """Rows by a status their model derives from its timestamps: ``status_q`` says each one in
    SQL, as the model's ``status`` says it in Python (one rule, two forms)."""

    STATUSES: tuple[str, ...] = ()

    def status_q(self, status: str, now: datetime | None = None) -> Q:
        raise NotImplementedError

    def with_status(self, statuses: Iterable[str], now: datetime | None = None):
        return self.filter(reduce(operator.or_, (self.status_q(s, now) for s in statuses)))


class ApiKeyQuerySet(StatusQuerySet):
    """A key's status in SQL, as ``ApiKey.status`` says it in Python."""

    STATUSES = ("active", "expired", "revoked")

    def status_q(self, status: str, now: datetime | None = None) -> Q:
        now = _now(now)
        revoked = Q(revoked_at__lte=now)
        expired = Q(expires_at__lte=now)
        return {
            "revoked": revoked,
            "expired": ~revoked & expired,
            "active": ~revoked & ~expired,
        }[status]

    def unrevoked(self, now: datetime | None = None):
        """Keys not (yet) revoked: active or expired, a rotated key within its grace included.
        These count against the account's key quota and are revoked when their user leaves."""
        return self.exclude(self.status_q("revoked", now))


class ApiKey(models.Model):
    """A Bearer token that acts as one user in one account, within its scopes.

    Only the public key id and an HMAC digest of the whole token are stored; the token itself is
    shown once, at creation (CONTRACT §5).
    """

    id = PrefixedIdField(prefix="key")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="api_keys")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    key_id = models.CharField(max_length=12, unique=True, editable=False)
    digest = models.CharField(max_length=64, editable=False)
    pepper_id = models.CharField(max_length=16, editable=False)
    scopes = models.JSONField(default=list)
    allowed_ips = models.JSONField(
        default=list, blank=True, help_text="CIDR networks the key may be used from; empty: any."
    )
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_used_ip = models.GenericIPAddressField(null=True, blank=True, editable=False)
    expiry_notified_at = models.DateTimeField(
        null=True, blank=True, editable=False, help_text="When api_key.expiring was recorded."
    )
    created_by = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        verbose_name = "API key"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["account", "-created_at"], name="apikey_account_created")]

    def __str__(self) -> str:
        return f"{self.name} ({self.display_prefix})"

    @property
    def prefix(self) -> str:
        """The token's public start (``hms_`` and the key id): how a person recognises a key."""
        return f"hms_{self.key_id}"

    @property
    def display_prefix(self) -> str:
        return f"{self.prefix}…"

    def status_at(self, now: datetime | None = None) -> str:
        """``active``, ``expired`` or ``revoked``; a rotated key is active until its grace ends.
        ``ApiKeyQuerySet.status_q`` is the same rule in SQL."""
        now = _now(now)
        if self.revoked_at is not None and self.revoked_at <= now:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"

    @property
    def status(self) -> str:
        return self.status_at()

    @property
    def status_label(self) -> str:
        """The status as the dashboard says it, in the page's language."""
        return API_KEY_STATUS_LABELS[self.status]


# What the dashboard shows for an API key's status (the API returns the code).
API_KEY_STATUS_LABELS = {
    "active": gettext_lazy("active"),
    "expired": gettext_lazy("expired"),
    "revoked": gettext_lazy("revoked"),
}


class InvitationQuerySet(StatusQuerySet):
    """An invitation's status in SQL, as ``Invitation.status`` says it in Python."""

    STATUSES = ("pending", "accepted", "revoked", "expired")

    def status_q(self, status: str, now: datetime | None = None) -> Q:
        open_ = Q(accepted_at__isnull=True, revoked_at__isnull=True)
        return {
            "pending": open_ & Q(expires_at__gt=_now(now)),
            "expired": open_ & Q(expires_at__lte=_now(now)),
            "accepted": Q(accepted_at__isnull=False),
            "revoked": Q(accepted_at__isnull=True, revoked_at__isnull=False),
        }[status]

    def pending(self, now: datetime | None = None):
        return self.filter(self.status_q("pending", now))


class Invitation(models.Model):
    """An e-mailed link that lets someone join an account with a role, valid for 7 days.

    Only a SHA-256 of the link's token is stored, like a password-reset token.
    """

    id = PrefixedIdField(prefix="ivt")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Role.choices)
    token_digest = models.CharField(max_length=64, unique=True, editable=False)
    invited_by = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = InvitationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["account", "-created_at"], name="invitation_account")]

    def __str__(self) -> str:
        return f"{self.email} to {self.account.name} as {self.role}"

    @property
    def status(self) -> str:
        """``pending``, ``accepted``, ``revoked`` or ``expired`` (``InvitationQuerySet.status_q``
        is the same rule in SQL)."""
        if self.accepted_at is not None:
            return "accepted"
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at <= timezone.now():
            return "expired"
        return "pending"


class SshKey(models.Model):
    """An SSH public key a user signs in to SFTP with (ed25519, ECDSA or RSA of 2,048 bits or
    more), known by its SHA256 fingerprint as OpenSSH shows it; once per user."""

    id = PrefixedIdField(prefix="sshk")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="ssh_keys")
    name = models.CharField(max_length=100)
    key_type = models.CharField(max_length=32, editable=False)
    bits = models.PositiveIntegerField(editable=False)
    public_key = models.TextField(editable=False, help_text="`<type> <base64>`, no comment.")
    fingerprint = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = "SSH key"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "fingerprint"], name="sshkey_unique_per_user")
        ]
        indexes = [models.Index(fields=["user", "-created_at"], name="sshkey_user_created")]

    def __str__(self) -> str:
        return f"{self.name} ({self.fingerprint})"


class AccountNote(models.Model):
    """A staff member's note on a customer (the customer 360 in admin): what staff should know
    next time ("prefers e-mail", "promised a refund on the 3rd"). Only staff ever see notes:
    like a ticket's internal note they record no event, since an account's events are its
    members' Activity page and webhooks; admin's history (LogEntry) records who added one."""

    id = PrefixedIdField(prefix="anote")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="staff_notes")
    author = models.ForeignKey(
        "accounts.User", null=True, on_delete=models.SET_NULL, related_name="+"
    )
    body = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.body[:60]
