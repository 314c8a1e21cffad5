"""Django admin for the desk: policies, departments and macros change through their services
(a refusal is the form's error, never a 500), tickets are view-only and open in the desk, and
nothing but macros is deleted."""

import html

import pytest
from django.urls import reverse

from accounts.actors import Actor
from hosting.errors import PermissionDenied, ValidationFailed
from support.models import Department, Macro, SlaPolicy
from support.services.departments import department_save, sla_policy_save
from support.services.macros import macro_create
from tests.accounts.test_admin import admin_url
from tests.factories import UserFactory
from tests.support.test_tickets import open_ticket

pytestmark = pytest.mark.django_db
HOURS = '{"time_zone": "Europe/Berlin", "hours": {"mon": [["09:00", "17:00"]]}}'


def errors_of(answer) -> str:
    return html.unescape(answer.content.decode())


def test_a_policy_is_added_with_its_targets_and_hours(admin_client):
    answer = admin_client.post(
        admin_url(SlaPolicy, "add"),
        {
            "name": "Gold",
            "targets": '{"urgent": {"first_response_minutes": 30}}',
            "calendar": HOURS,
        },
    )

    assert answer.status_code == 302
    policy = SlaPolicy.objects.get(name="Gold")
    assert policy.targets == {"urgent": {"first_response_minutes": 30}}
    assert policy.calendar["time_zone"] == "Europe/Berlin"


@pytest.mark.parametrize(
    ("targets", "calendar", "said"),
    [
        ('{"asap": {"first_response_minutes": 30}}', "{}", "Unknown priority 'asap'"),
        ('{"urgent": {"first_response_minutes": 0}}', "{}", "urgent.first_response_minutes"),
        ('{"urgent": {"reply_minutes": 5}}', "{}", "Each priority takes only"),
        ("{}", '{"time_zone": "Mars/Olympus", "hours": {}}', "Mars/Olympus"),
        ("{}", '{"time_zone": "UTC", "hours": {"mon": [["17:00", "09:00"]]}}', "Monday"),
    ],
)
def test_a_wrong_policy_is_refused_on_its_field(admin_client, targets, calendar, said):
    answer = admin_client.post(
        admin_url(SlaPolicy, "add"), {"name": "Gold", "targets": targets, "calendar": calendar}
    )

    assert answer.status_code == 200
    assert said in errors_of(answer)
    assert not SlaPolicy.objects.exists()


def test_a_department_is_added_with_its_staff(admin_client, sla_policy):
    agent = UserFactory(is_staff=True)

    answer = admin_client.post(
        admin_url(Department, "add"),
        {
            "name": "Abuse",
            "email": "Abuse@Desk.example",
            "default_priority": "high",
            "sla_policy": sla_policy.pk,
            "customer_visible": "",
            "active": "on",
            "members": [agent.pk],
        },
    )

    assert answer.status_code == 302
    department = Department.objects.get(name="Abuse")
    assert (department.email, department.default_priority) == ("abuse@desk.example", "high")
    assert (department.customer_visible, list(department.members.all())) == (False, [agent])


def test_a_department_takes_only_staff_and_a_free_address(admin_client, technical, settings):
    settings.SUPPORT_REPLY_ADDRESS = "support@desk.example"
    customer = UserFactory(is_staff=False)
    form = {"name": "Abuse", "default_priority": "normal", "active": "on"}

    taken = admin_client.post(admin_url(Department, "add"), {**form, "email": technical.email})
    tagged = admin_client.post(
        admin_url(Department, "add"), {**form, "email": "support+abuse@desk.example"}
    )
    department = department_save(
        department=None,
        name="Abuse",
        email="",
        default_priority="normal",
        sla_policy=None,
        customer_visible=True,
        active=True,
        members=[],
        actor=Actor(),
    )
    not_staff = admin_client.post(
        admin_url(Department, "change", department.pk),
        {**form, "email": "", "members": [customer.pk]},
    )

    assert "Another department takes this address." in errors_of(taken)
    assert "carry ticket tokens" in errors_of(tagged)
    # The form offers staff only; a customer's id is not a choice, and the service refuses one.
    assert not_staff.status_code == 200
    assert not department.members.exists()
    with pytest.raises(ValidationFailed) as refused:
        department_save(
            department=department,
            name="Abuse",
            email="",
            default_priority="normal",
            sla_policy=None,
            customer_visible=True,
            active=True,
            members=[customer],
            actor=Actor(),
        )
    assert refused.value.details["fields"][0]["code"] == "not_staff"


def test_departments_and_policies_are_not_deleted(admin_client, technical):
    assert admin_client.get(admin_url(Department, "delete", technical.pk)).status_code == 403
    assert admin_client.get(
        admin_url(SlaPolicy, "delete", technical.sla_policy.pk)
    ).status_code == (403)


def test_macros_are_added_changed_and_deleted_through_their_services(admin_client, technical):
    added = admin_client.post(
        admin_url(Macro, "add"),
        {
            "name": "Restart",
            "department": technical.pk,
            "set_status": "pending_customer",
            "body": "Please restart the server from the dashboard.",
        },
    )
    macro = Macro.objects.get()
    duplicate = admin_client.post(
        admin_url(Macro, "add"),
        {"name": "restart", "department": technical.pk, "set_status": "", "body": "Again"},
    )
    deleted = admin_client.post(
        admin_url(Macro, "changelist"),
        {"action": "delete_selected_macros", "_selected_action": [macro.pk]},
    )

    assert added.status_code == 302
    assert macro.set_status == "pending_customer"
    assert "already exists" in errors_of(duplicate)
    assert deleted.status_code == 302
    assert not Macro.objects.exists()


def test_tickets_are_view_only_and_open_in_the_desk(admin_client, owner, account, technical):
    ticket = open_ticket(owner, account, technical)

    page = admin_client.get(admin_url(ticket.__class__, "change", ticket.pk))
    listed = admin_client.get(admin_url(ticket.__class__, "changelist"), {"q": ticket.number})

    assert reverse("desk_ticket", args=[ticket.pk]) in page.content.decode()
    assert 'name="_save"' not in page.content.decode()
    assert ticket.subject in listed.content.decode()
    assert admin_client.get(admin_url(ticket.__class__, "add")).status_code == 403


def test_a_policy_change_keeps_due_times_already_promised(owner, account, technical):
    ticket = open_ticket(owner, account, technical)
    promised = ticket.first_response_due_at

    sla_policy_save(
        policy=technical.sla_policy,
        name="Standard",
        actor=Actor(),
        calendar={},
        targets={"normal": {"first_response_minutes": 5}},
    )
    ticket.refresh_from_db()

    assert ticket.first_response_due_at == promised


def test_macro_services_refuse_customers(owner):
    with pytest.raises(PermissionDenied):
        macro_create(name="x", body="y", actor=Actor(user=owner))
