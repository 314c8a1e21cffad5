"""A key's and an invitation's status: one rule, the same in Python and in SQL."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import ApiKey, Invitation
from accounts.services import api_key_create, invitation_create

NOW = timezone.now()
HOUR = timedelta(hours=1)

KEY_CASES = {
    "never revoked, no expiry": (None, None),
    "revoked": (NOW - HOUR, None),
    "rotated, within grace": (NOW + HOUR, None),
    "expired": (None, NOW - HOUR),
    "revoked and expired": (NOW - HOUR, NOW - HOUR),
    "expires later": (None, NOW + HOUR),
}


@pytest.fixture
def keys(owner, account) -> dict[str, ApiKey]:
    made = {}
    for name, (revoked_at, expires_at) in KEY_CASES.items():
        api_key, _ = api_key_create(account=account, user=owner, name=name, scopes=["servers:read"])
        ApiKey.objects.filter(pk=api_key.pk).update(revoked_at=revoked_at, expires_at=expires_at)
        api_key.refresh_from_db()
        made[name] = api_key
    return made


def test_the_key_status_in_sql_is_the_status_in_python(keys):
    for name, api_key in keys.items():
        for status in ("active", "expired", "revoked"):
            in_sql = ApiKey.objects.with_status([status]).filter(pk=api_key.pk).exists()
            assert in_sql == (api_key.status == status), (name, status)
    assert {k.name for k in ApiKey.objects.unrevoked()} == {
        "never revoked, no expiry",
        "rotated, within grace",
        "expired",
        "expires later",
    }


def test_the_invitation_status_in_sql_is_the_status_in_python(owner, account):
    actor = Actor(user=owner)
    cases = {}
    for index, change in enumerate(
        [{}, {"accepted_at": NOW}, {"revoked_at": NOW}, {"expires_at": NOW - HOUR}]
    ):
        invitation, _ = invitation_create(
            account=account, email=f"p{index}@example.com", role="viewer", actor=actor
        )
        Invitation.objects.filter(pk=invitation.pk).update(**change)
        invitation.refresh_from_db()
        cases[invitation.pk] = invitation.status
    assert sorted(cases.values()) == ["accepted", "expired", "pending", "revoked"]
    for pk, status in cases.items():
        for candidate in ("pending", "accepted", "revoked", "expired"):
            found = Invitation.objects.with_status([candidate]).filter(pk=pk).exists()
            assert found == (status == candidate)
    assert [i.pk for i in Invitation.objects.pending()] == [
        pk for pk, status in cases.items() if status == "pending"
    ]
