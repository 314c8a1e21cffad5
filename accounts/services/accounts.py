"""Accounts: creating, changing, suspending (staff) and lifting a suspension."""

from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from accounts.actors import SYSTEM, Actor
from accounts.models import Account, AccountNote, Membership, User
from accounts.representations import (
    account_representation,
    member_representation,
)
from accounts.roles import (
    Right,
    Role,
    role_can,
)
from accounts.selectors import role_in, user_has_second_factor
from events.services import changed_attributes, record_event
from hosting.errors import (
    Conflict,
    PermissionDenied,
    ValidationFailed,
)


def account_lock(*account_ids: str, skip_locked: bool = False) -> set[str]:
    """Lock the accounts' rows for the rest of the transaction; the ids locked (with
    ``skip_locked``, those no other transaction holds: the rest are passed over, not waited for).

    The one account lock. It serializes what is counted or written per account (quotas, keys,
    the credit ledger, payment methods, webhook endpoints, plan changes). **Lock order:** an
    account's row before anything else of it that is locked, and several accounts in id order:
    the account before a document number series (``billing.services.invoices``), before its
    subscriptions and invoices, so that two transactions never each hold one and wait for the
    other. Call it inside ``transaction.atomic``."""
    return set(
        Account.objects.select_for_update(skip_locked=skip_locked)
        .filter(pk__in=account_ids)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def account_locked(account_id: str) -> Account:
    """The account re-read under its lock (``account_lock``), for a change or a count."""
    return Account.objects.select_for_update().get(pk=account_id)


@transaction.atomic
def account_create(
    *,
    name: str,
    owner_email: str,
    owner_password: str | None = None,
    owner_name: str = "",
    actor: Actor = SYSTEM,
) -> Account:
    """Create an account with its first owner.

    Without ``owner_password`` (staff, or a signed-in person adding an account) a known e-mail's
    user becomes the owner. With one, this is a sign-up, which makes a new user: a known e-mail
    is refused, also when two sign-ups race, so nobody is signed in as someone else.
    """
    name = name.strip()
    if not name:
        raise ValidationFailed.field("name", "required", _("An account needs a name."))
    email = owner_email.strip().lower()
    user = User.objects.filter(email__iexact=email).first()
    taken = ValidationFailed.field(
        "email", "unique", _("An account with this e-mail address already exists; sign in instead.")
    )
    if user is not None and owner_password is not None:
        raise taken
    if user is None:
        try:
            with transaction.atomic():
                user = User.objects.create_user(
                    email=email, password=owner_password, name=owner_name
                )
        except IntegrityError:
            raise taken from None
    account = Account.objects.create(name=name, **settings.NEW_ACCOUNT_UNBILLED_ALLOWANCE)
    membership = Membership.objects.create(account=account, user=user, role=Role.OWNER)
    record_event(
        type="account.created",
        account=account,
        object_type="account",
        obj=account_representation(account),
        actor=actor,
    )
    record_event(
        type="member.added",
        account=account,
        object_type="member",
        obj=member_representation(membership),
        actor=actor,
    )
    return account


# Limits staff set on an account: the one that may be null falls back to the default; the
# unbilled allowance (what may run without a plan) may be zero.
UNBILLED_ALLOWANCE = (
    "unbilled_instances",
    "unbilled_memory_mb",
    "unbilled_cpu_percent",
    "unbilled_disk_mb",
)
ACCOUNT_LIMITS = (
    "rate_limit_per_minute",
    "max_api_keys",
    "max_servers",
    "max_bots",
    "max_memory_mb",
    *UNBILLED_ALLOWANCE,
)
_NULLABLE_LIMITS = {"rate_limit_per_minute"}


def account_changes_clean(**changes: Any) -> dict[str, Any]:
    """``changes`` to an account's name or limits, checked; every bad field is named at once."""
    unknown = set(changes) - {"name", *ACCOUNT_LIMITS}
    if unknown:
        raise ValueError(f"Not an account setting: {', '.join(sorted(unknown))}")
    problems, clean = [], {}
    for field, value in changes.items():
        if field == "name":
            value = str(value).strip()
            if not value:
                problems.append((field, "required", _("An account needs a name.")))
        elif value is None and field not in _NULLABLE_LIMITS:
            # Translators: %(field)s is the setting's code name (max_servers).
            problems.append((field, "null", _("%(field)s cannot be empty.") % {"field": field}))
        elif value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < _minimum(field)
        ):
            message = _("%(field)s must be an integer of at least %(min)s.") % {
                "field": field,
                "min": _minimum(field),
            }
            problems.append((field, "min_value", message))
        clean[field] = value
    if problems:
        fields = [{"name": name, "code": code, "message": text} for name, code, text in problems]
        raise ValidationFailed(problems[0][2], details={"fields": fields})
    return clean


def _minimum(field: str) -> int:
    return 0 if field in UNBILLED_ALLOWANCE else 1


@transaction.atomic
def account_update(*, account: Account, actor: Actor, **changes: Any) -> Account:
    """Change an account's name or (staff only, enforced by callers' scopes) its limits:
    ``rate_limit_per_minute``, ``max_api_keys``, ``max_servers``, ``max_bots``,
    ``max_memory_mb`` and the unbilled allowance (``UNBILLED_ALLOWANCE``). The API, the staff
    API and Django admin all change accounts here."""
    changes = account_changes_clean(**changes)
    account = account_locked(account.pk)
    before = {**account_representation(account), **_limits_of(account)}
    for field, value in changes.items():
        setattr(account, field, value)
    account.save()
    after = account_representation(account)
    previous = changed_attributes(before, {**after, **_limits_of(account)})
    previous.pop("updated_at", None)
    if previous:
        record_event(
            type="account.updated",
            account=account,
            object_type="account",
            obj=after,
            actor=actor,
            previous_attributes=previous,
        )
    return account


def _limits_of(account: Account) -> dict[str, Any]:
    return {field: getattr(account, field) for field in ACCOUNT_LIMITS}


@transaction.atomic
def account_suspend(*, account: Account, reason: str = "", actor: Actor) -> Account:
    """Suspend an account (staff): its keys answer 403 and its dashboard turns read-only."""
    account = account_locked(account.pk)
    if account.is_suspended:
        return account
    before = account_representation(account)
    account.status = Account.Status.SUSPENDED
    account.suspended_at = timezone.now()
    account.suspended_reason = reason.strip()[:500]
    account.save()
    after = account_representation(account)
    record_event(
        type="account.suspended",
        account=account,
        object_type="account",
        obj=after,
        actor=actor,
        previous_attributes=changed_attributes(before, after),
    )
    return account


@transaction.atomic
def account_unsuspend(*, account: Account, actor: Actor) -> Account:
    """Lift a suspension (staff): its keys and dashboard work again. Idempotent."""
    account = account_locked(account.pk)
    if not account.is_suspended:
        return account
    before = account_representation(account)
    account.status = Account.Status.ACTIVE
    account.suspended_at = None
    account.suspended_reason = ""
    account.save()
    after = account_representation(account)
    record_event(
        type="account.unsuspended",
        account=account,
        object_type="account",
        obj=after,
        actor=actor,
        previous_attributes=changed_attributes(before, after),
    )
    return account


class SecondFactorMissing(Conflict):
    code = "second_factor_missing"
    # Translators: "Profile → Security" names the dashboard's page and its section, as those
    # are translated there.
    message = gettext_noop(
        "Set up a second factor of your own (Profile → Security) before requiring one of "
        "every member."
    )


@transaction.atomic
def account_require_second_factor(*, account: Account, required: bool, actor: Actor) -> Account:
    """Require (or stop requiring) a second factor of every member at sign-in: the dashboard
    then sends a member whose session passed none to set one up or type it. Callers check that
    the actor may: only owners (``Right.SET_SIGN_IN_POLICY``; 403 ``permission_denied``). An
    owner switching it on needs a factor of their own first (409 ``second_factor_missing``), as
    GitHub's organisations ask. API keys are not affected (they are the machine path)."""
    if not role_can(role_in(account=account, user=actor.user), Right.SET_SIGN_IN_POLICY):
        raise PermissionDenied(_("Only the account's owners set how its members sign in."))
    account = account_locked(account.pk)
    if account.require_second_factor == required:
        return account
    if required and actor.user is not None and not user_has_second_factor(actor.user):
        raise SecondFactorMissing()
    before = account_representation(account)
    account.require_second_factor = required
    account.save(update_fields=["require_second_factor", "updated_at"])
    after = account_representation(account)
    previous = changed_attributes(before, after)
    previous.pop("updated_at", None)
    record_event(
        type="account.updated",
        account=account,
        object_type="account",
        obj=after,
        actor=actor,
        previous_attributes=previous,
    )
    return account


ACCOUNT_NOTE_LIMIT = 5000


@transaction.atomic
def account_note_add(*, account: Account, body: str, actor: Actor) -> AccountNote:
    """A staff note on the account (``AccountNote``): staff-only, so no event (see the model)."""
    text = (body or "").strip()
    if not text:
        raise ValidationFailed.field("body", "required", _("Write the note first."))
    if len(text) > ACCOUNT_NOTE_LIMIT:
        raise ValidationFailed.field(
            "body",
            "too_long",
            _("A note has at most %(limit)s characters.") % {"limit": ACCOUNT_NOTE_LIMIT},
        )
    return AccountNote.objects.create(account=account, author=actor.user, body=text)
