"""Fixtures of the analytics tests: a staff member's key for the staff reports."""

import pytest

from accounts.roles import Role
from tests.factories import AccountFactory, MembershipFactory, UserFactory


def staff_key(make_token, client_for, **user_fields):
    """A staff user (of the hosting company's own account) and an API client with their
    ``admin:read`` key."""
    company = AccountFactory(name="Hosting Company")
    user = UserFactory(is_staff=True, **user_fields)
    MembershipFactory(account=company, user=user, role=Role.OWNER)
    return user, client_for(make_token(user, company, ["admin:read"]))


@pytest.fixture
def staff_api(make_token, client_for):
    return staff_key(make_token, client_for, email="finance@hosting.example")[1]
