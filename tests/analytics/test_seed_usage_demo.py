"""seed_usage_demo: two days of one-minute samples for the demo owner's running servers,
through the real ingest, and nothing twice when run again."""

import pytest
from django.core.management import call_command

from accounts.roles import Role
from analytics.models import UsageDay, UsageSample
from tests.factories import MembershipFactory, ServerFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_it_records_two_days_for_running_servers_once(account):
    owner = UserFactory(email="demo@example.com")
    MembershipFactory(account=account, user=owner, role=Role.OWNER)
    running = ServerFactory(account=account, status="running")
    ServerFactory(account=account, status="stopped")
    call_command("seed_usage_demo")
    assert set(UsageSample.objects.values_list("instance_id", flat=True)) == {running.id}
    assert UsageSample.objects.count() == 48 * 60
    assert sum(UsageDay.objects.values_list("samples", flat=True)) == 48 * 60
    call_command("seed_usage_demo")
    assert UsageSample.objects.count() <= 48 * 60 + 1  # a minute may have passed meanwhile
