"""``manage.py seed_support_demo``: departments, an SLA policy, macros, a staff member who works
the desk and two tickets of the demo account, made through the services and made once however
often it runs."""

import pytest
from django.core.management import CommandError

from accounts.models import User
from support.models import Department, Macro, MessageKind, SlaPolicy, Ticket
from support.selectors import messages_visible, tickets_for_staff
from tests.billing.test_seed_demo import EMAIL, run

pytestmark = pytest.mark.django_db


def counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (SlaPolicy, Department, Macro, Ticket, User)
    }


def test_it_seeds_the_desk_once_however_often_it_runs(client):
    run("seed_demo", "--servers", "2", "--email", EMAIL)

    first = run("seed_support_demo", "--email", EMAIL, "--password", "staff-password")
    seeded = counts()
    second = run("seed_support_demo", "--email", EMAIL)

    assert first[0] == "Desk: 4 departments worked by staff@example.com; 2 new tickets."
    # Staff need a second factor for the desk: the demo's has an authenticator app, the same
    # key on every run (scripts/run prints it).
    key = first[1].removeprefix("Staff authenticator key: ")
    assert len(first) == 2 and len(key) == 32 and second[-1] == first[1]
    assert second[0].endswith("0 new tickets.")
    assert counts() == seeded
    assert seeded["Department"] == 4 and seeded["Macro"] == 3
    staff = User.objects.get(email="staff@example.com")
    assert staff.is_staff and set(staff.support_departments.all()) == set(Department.objects.all())
    assert tickets_for_staff(staff).count() == 2
    answered = Ticket.objects.get(subject="Server stops at 'Loading world'")
    assert (answered.status, answered.assignee, answered.server is not None) == (
        "pending_customer",
        staff,
        True,
    )
    # The internal note is there for staff and not for the customer.
    assert MessageKind.INTERNAL in set(
        messages_visible(answered, staff=True).values_list("kind", flat=True)
    )
    assert MessageKind.INTERNAL not in set(
        messages_visible(answered, staff=False).values_list("kind", flat=True)
    )
    assert client.login(email="staff@example.com", password="staff-password")
    assert client.get("/desk").status_code == 200


def test_it_needs_the_demo_account_first():
    with pytest.raises(CommandError, match="run seed_demo first"):
        run("seed_support_demo", "--email", "nobody@example.com")
