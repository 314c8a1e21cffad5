import pytest

from support.models import Department, SlaPolicy
from tests.factories import UserFactory

# Around the clock, so the due times are plain arithmetic; business hours are
# tests/support/test_business_hours.py's and test_sla.py's.
TARGETS = {
    "urgent": {"first_response_minutes": 60, "resolution_minutes": 240},
    "high": {"first_response_minutes": 120, "resolution_minutes": 480},
    "normal": {"first_response_minutes": 240, "resolution_minutes": 1440},
}


@pytest.fixture
def sla_policy(db):
    return SlaPolicy.objects.create(name="Standard", targets=TARGETS)


@pytest.fixture
def technical(sla_policy):
    return Department.objects.create(
        name="Technical", email="support@desk.example", sla_policy=sla_policy
    )


@pytest.fixture
def billing_department(sla_policy):
    return Department.objects.create(
        name="Billing", email="billing@desk.example", sla_policy=sla_policy
    )


@pytest.fixture
def agent(technical):
    """A staff member of Technical."""
    user = UserFactory(email="agent@hosting.example", is_staff=True)
    technical.members.add(user)
    return user


@pytest.fixture
def billing_agent(billing_department):
    """A staff member of Billing only."""
    user = UserFactory(email="accounts@hosting.example", is_staff=True)
    billing_department.members.add(user)
    return user


@pytest.fixture
def sales(sla_policy):
    return Department.objects.create(name="Sales", email="sales@desk.example")


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    """Attachments land in the test's own folder."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
