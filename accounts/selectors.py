"""Read-side queries for accounts, members and API keys."""

from django.db.models import OuterRef, Subquery

from accounts.models import ApiKey, Membership


def api_key_with_context(*, key_id: str) -> ApiKey | None:
    """The key with its user, account and the user's current role, in one query.

    The role is read live (not stored on the key) so demoting or removing a member changes what
    their keys may do on the very next request. ``role`` is ``None`` for a non-member.
    """
    role = Membership.objects.filter(account=OuterRef("account_id"), user=OuterRef("user_id"))
    return (
        ApiKey.objects.select_related("user", "account")
        .annotate(role=Subquery(role.values("role")[:1]))
        .filter(key_id=key_id)
        .first()
    )
