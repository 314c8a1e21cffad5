"""The desk's configuration: SLA policies and departments, set up by staff in Django admin.

They are the hosting company's own settings, not an account's data, so they record no event
(events belong to an account and reach its webhooks); the admin's history keeps who changed
what. Nothing is deleted: a department is deactivated (its tickets keep pointing at it), and a
policy in use by a department cannot go. A policy's new targets apply to tickets from their
next retarget on (a new ticket, or a change of priority or department); due times already set
stay as promised.
"""

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from accounts.actors import Actor
from accounts.models import User
from hosting.errors import ValidationFailed
from support.business_hours import BusinessCalendar
from support.models import Department, Priority, SlaPolicy

TARGET_NAMES = ("first_response_minutes", "resolution_minutes")
# A year of minutes: a longer target is a typing mistake, not a promise.
TARGET_MAX_MINUTES = 366 * 24 * 60


def _name(model: type[Department | SlaPolicy], value: Any, *, exclude: Any = None) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationFailed.field("name", "required", _("This field is required."))
    value = value.strip()
    taken = model._default_manager.filter(name__iexact=value)
    if exclude is not None:
        taken = taken.exclude(pk=exclude.pk)
    if taken.exists():
        raise ValidationFailed.field(
            "name", "taken", _("%(name)s is already used.") % {"name": repr(value)}
        )
    return value


def _targets(value: Any) -> dict[str, dict[str, int]]:
    """``{"<priority>": {"first_response_minutes": n, "resolution_minutes": n}}``; a priority
    or a target left out has none."""
    if not isinstance(value, dict):
        raise ValidationFailed.field(
            "targets", "invalid", _('An object such as {"urgent": {"first_response_minutes": 60}}.')
        )
    cleaned: dict[str, dict[str, int]] = {}
    for priority, wanted in value.items():
        if priority not in Priority.values:
            raise ValidationFailed.field(
                "targets",
                "invalid",
                _("Unknown priority %(priority)s; use %(choices)s.")
                % {"priority": repr(priority), "choices": ", ".join(Priority.values)},
            )
        if not isinstance(wanted, dict) or set(wanted) - set(TARGET_NAMES):
            raise ValidationFailed.field(
                "targets",
                "invalid",
                # Translators: %(first)s and %(second)s are the targets' field names.
                _("Each priority takes only %(first)s and %(second)s (minutes).")
                % {"first": TARGET_NAMES[0], "second": TARGET_NAMES[1]},
            )
        for name, minutes in wanted.items():
            if (
                not isinstance(minutes, int)
                or isinstance(minutes, bool)
                or not 1 <= minutes <= TARGET_MAX_MINUTES
            ):
                raise ValidationFailed.field(
                    "targets",
                    "invalid",
                    _("%(target)s must be a whole number of minutes from 1 to %(limit)s.")
                    % {"target": f"{priority}.{name}", "limit": TARGET_MAX_MINUTES},
                )
        cleaned[priority] = dict(wanted)
    return cleaned


def _calendar(value: Any) -> dict[str, Any]:
    """Empty: around the clock; else the weekly hours (``BusinessCalendar.from_json``)."""
    if value in (None, {}):
        return {}
    try:
        return BusinessCalendar.from_json(value).to_json()
    except ValueError as mistake:
        raise ValidationFailed.field("calendar", "invalid", str(mistake)) from mistake


@transaction.atomic
def sla_policy_save(
    *,
    policy: SlaPolicy | None,
    name: str,
    targets: Any,
    calendar: Any,
    actor: Actor,
) -> SlaPolicy:
    """Create (``policy=None``) or change an SLA policy."""
    policy = policy or SlaPolicy()
    policy.name = _name(SlaPolicy, name, exclude=policy if policy.pk else None)
    policy.targets = _targets(targets)
    policy.calendar = _calendar(calendar)
    policy.save()
    return policy


def _email(value: Any, *, exclude: Department | None) -> str:
    value = (value or "").strip().lower()
    if not value:
        return ""
    local, _at, domain = value.partition("@")
    reply_local, _at, reply_domain = settings.SUPPORT_REPLY_ADDRESS.lower().partition("@")
    if domain == reply_domain and local.startswith(reply_local + "+"):
        raise ValidationFailed.field(
            "email", "invalid", _("Addresses with the reply address's '+' tag carry ticket tokens.")
        )
    taken = Department.objects.filter(email__iexact=value)
    if exclude is not None:
        taken = taken.exclude(pk=exclude.pk)
    if taken.exists():
        raise ValidationFailed.field("email", "taken", _("Another department takes this address."))
    return value


@transaction.atomic
def department_save(
    *,
    department: Department | None,
    name: str,
    email: str,
    default_priority: str,
    sla_policy: SlaPolicy | None,
    customer_visible: bool,
    active: bool,
    members: list[User],
    actor: Actor,
) -> Department:
    """Create (``department=None``) or change a department. Its members must be staff: they
    see its tickets in the desk and its mail notices."""
    department = department or Department()
    existing = department if department.pk else None
    department.name = _name(Department, name, exclude=existing)
    department.email = _email(email, exclude=existing)
    if default_priority not in Priority.values:
        raise ValidationFailed.field("default_priority", "invalid", _("Not a priority."))
    department.default_priority = default_priority
    department.sla_policy = sla_policy
    department.customer_visible = bool(customer_visible)
    department.active = bool(active)
    strangers = [user.email for user in members if not user.works_desk]
    if strangers:
        raise ValidationFailed.field(
            "members",
            "not_staff",
            _(
                "Only active staff whose role works the desk can work a department; not: "
                "%(addresses)s."
            )
            % {"addresses": ", ".join(sorted(strangers))},
        )
    department.save()
    department.members.set(members)
    return department
