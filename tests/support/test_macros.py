"""Macros through their services: creating, changing and deleting canned responses, the rules
they are held to, and which of them a ticket is offered."""

import pytest

from accounts.actors import SYSTEM, Actor
from events.models import Event
from hosting.errors import PermissionDenied, ValidationFailed
from support.models import Macro
from support.selectors import macros_for_ticket
from support.services.macros import macro_create, macro_delete, macro_update
from tests.support.test_tickets import open_ticket

pytestmark = pytest.mark.django_db


def field_of(refusal: pytest.ExceptionInfo) -> tuple[str, str]:
    [field] = refusal.value.details["fields"]
    return field["name"], field["code"]


def test_staff_create_a_macro_of_a_department_or_of_all(agent, technical):
    actor = Actor(user=agent)
    restart = macro_create(
        name=" Restart ",
        body="Please restart.\n",
        department=technical,
        set_status="pending_customer",
        actor=actor,
    )
    thanks = macro_create(name="Thanks", body="Thank you!", actor=actor)

    restart.refresh_from_db()
    assert (restart.name, restart.body, restart.department_id, restart.set_status) == (
        "Restart",
        "Please restart.",
        technical.pk,
        "pending_customer",
    )
    assert (thanks.department_id, thanks.set_status) == (None, "")
    assert not Event.objects.exists()  # staff configuration: no customer's event


def test_a_macro_is_refused_with_the_field_named(technical, sales):
    with pytest.raises(ValidationFailed) as empty:
        macro_create(name="", body="Text", actor=SYSTEM)
    assert field_of(empty) == ("name", "required")
    with pytest.raises(ValidationFailed) as long:
        macro_create(name="x" * 101, body="Text", actor=SYSTEM)
    assert field_of(long) == ("name", "max_length")
    with pytest.raises(ValidationFailed) as no_body:
        macro_create(name="Empty", body="   ", actor=SYSTEM)
    assert field_of(no_body) == ("body", "required")
    with pytest.raises(ValidationFailed) as status:
        macro_create(name="Odd", body="Text", set_status="waiting", actor=SYSTEM)
    assert field_of(status) == ("set_status", "invalid")
    sales.active = False
    sales.save()
    with pytest.raises(ValidationFailed) as inactive:
        macro_create(name="Sale", body="Text", department=sales, actor=SYSTEM)
    assert field_of(inactive) == ("department", "not_found")
    macro_create(name="Restart", body="Text", department=technical, actor=SYSTEM)
    with pytest.raises(ValidationFailed) as twice:
        macro_create(name="restart", body="Again", department=technical, actor=SYSTEM)
    assert field_of(twice) == ("name", "duplicate")
    macro_create(name="Restart", body="For everyone", actor=SYSTEM)  # another menu: allowed
    assert Macro.objects.count() == 2


def test_only_staff_manage_macros(owner, technical):
    with pytest.raises(PermissionDenied):
        macro_create(name="Mine", body="Text", actor=Actor(user=owner))
    macro = macro_create(name="Staff's", body="Text", actor=SYSTEM)
    with pytest.raises(PermissionDenied):
        macro_update(macro=macro, changes={"body": "Changed"}, actor=Actor(user=owner))
    with pytest.raises(PermissionDenied):
        macro_delete(macro=macro, actor=Actor(user=owner))
    assert Macro.objects.get(pk=macro.pk).body == "Text"


def test_staff_change_and_delete_a_macro(agent, technical, billing_department):
    actor = Actor(user=agent)
    macro = macro_create(name="Restart", body="Text", department=technical, actor=actor)
    macro_create(name="Refund", body="Text", department=billing_department, actor=actor)

    changed = macro_update(
        macro=macro,
        changes={"body": "Please restart.", "department": None, "set_status": "resolved"},
        actor=actor,
    )
    changed.refresh_from_db()
    assert (changed.body, changed.department_id, changed.set_status) == (
        "Please restart.",
        None,
        "resolved",
    )
    with pytest.raises(ValidationFailed) as unknown:
        macro_update(macro=macro, changes={"priority": "high"}, actor=actor)
    assert field_of(unknown) == ("priority", "unknown_field")
    with pytest.raises(ValidationFailed) as clash:
        macro_update(
            macro=macro,
            changes={"name": "Refund", "department": billing_department},
            actor=actor,
        )
    assert field_of(clash) == ("name", "duplicate")
    assert Macro.objects.get(pk=macro.pk).department_id is None

    macro_delete(macro=macro, actor=actor)
    assert not Macro.objects.filter(pk=macro.pk).exists()


def test_a_ticket_is_offered_its_department_s_macros_and_the_global_ones(
    owner, account, technical, billing_department
):
    ticket = open_ticket(owner, account, technical)
    zebra = macro_create(name="Zebra", body="Z", actor=SYSTEM)
    restart = macro_create(name="Restart", body="R", department=technical, actor=SYSTEM)
    macro_create(name="Refund", body="F", department=billing_department, actor=SYSTEM)

    assert list(macros_for_ticket(ticket)) == [restart, zebra]
