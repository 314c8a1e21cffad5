"""Macros: the staff's canned responses, each with its text and optionally the status a reply
with it sets. A macro of a department is offered on that department's tickets; one without a
department on every ticket (``support.selectors.macros_for_ticket``).

Macros are the desk's own configuration, not a customer's data: they belong to no account, so
they record no event (events reach the customer's webhooks) and Django admin's change log is
their history. The services still take the ``actor`` every service takes, and use it for the
one rule that is about who: only staff (or the system itself, for commands) manage macros.
"""

from typing import Any, cast

from django.db import transaction
from django.utils.translation import gettext as _

from accounts.actors import Actor
from hosting.errors import PermissionDenied, ValidationFailed
from support.models import Department, Macro, TicketStatus
from support.services.tickets import BODY_LIMIT, required_text

# A macro's text becomes a reply's text: the conversation's rule and limit (``_text``).
NAME_LIMIT = cast(int, Macro._meta.get_field("name").max_length)
FIELDS = frozenset({"name", "body", "department", "set_status"})


def _check_actor(actor: Actor) -> None:
    if actor.user is not None and not actor.user.is_staff:
        raise PermissionDenied(_("Only staff manage macros."))


def _department(value: Any) -> Department | None:
    if value is None:
        return None
    if not isinstance(value, Department) or not value.active:
        raise ValidationFailed.field("department", "not_found", _("No such department."))
    return value


def _set_status(value: Any) -> str:
    if value in (None, ""):
        return ""
    if value not in TicketStatus.values:
        raise ValidationFailed.field("set_status", "invalid", _("Not a ticket status."))
    return value


def _check_unique(macro: Macro) -> None:
    # Staff pick a macro by its name from one menu: department's and global ones together.
    same = Macro.objects.filter(name__iexact=macro.name, department=macro.department)
    if same.exclude(pk=macro.pk).exists():
        raise ValidationFailed.field(
            "name", "duplicate", _("A macro of this name already exists for this department.")
        )


@transaction.atomic
def macro_create(
    *,
    name: str,
    body: str,
    actor: Actor,
    department: Department | None = None,
    set_status: str = "",
) -> Macro:
    """A new macro: of ``department`` (active), or of every department when None. Its name is
    unique within its department, ignoring case; ``set_status``: a ticket status or empty."""
    _check_actor(actor)
    macro = Macro(
        name=required_text("name", name, NAME_LIMIT),
        body=required_text("body", body, BODY_LIMIT),
        department=_department(department),
        set_status=_set_status(set_status),
    )
    _check_unique(macro)
    macro.save(force_insert=True)
    return macro


@transaction.atomic
def macro_update(*, macro: Macro, changes: dict[str, Any], actor: Actor) -> Macro:
    """Change a macro's ``name``, ``body``, ``department`` (a ``Department`` or None) or
    ``set_status``; the same rules as ``macro_create``."""
    _check_actor(actor)
    unknown = sorted(set(changes) - FIELDS)
    if unknown:
        raise ValidationFailed.field(unknown[0], "unknown_field", _("This field is not accepted."))
    macro = Macro.objects.select_for_update().get(pk=macro.pk)
    if "name" in changes:
        macro.name = required_text("name", changes["name"], NAME_LIMIT)
    if "body" in changes:
        macro.body = required_text("body", changes["body"], BODY_LIMIT)
    if "department" in changes:
        macro.department = _department(changes["department"])
    if "set_status" in changes:
        macro.set_status = _set_status(changes["set_status"])
    _check_unique(macro)
    macro.save()
    return macro


@transaction.atomic
def macro_delete(*, macro: Macro, actor: Actor) -> None:
    """Remove a macro; replies written with it keep their text."""
    _check_actor(actor)
    Macro.objects.filter(pk=macro.pk).delete()
