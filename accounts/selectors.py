"""Read-side queries for accounts, members and API keys."""

from collections.abc import Callable
from dataclasses import dataclass

from django.db import connections, router
from django.db.models import Count, OuterRef, Prefetch, QuerySet, Subquery

from accounts.models import Account, ApiKey, Invitation, Membership, SshKey, User
from accounts.roles import Right, Role, role_can
from hosting.queries import Param, compile_queryset, compiled


def api_key_with_context(*, key_id: str) -> ApiKey | None:
    """The key with its user, account and the user's current role, in one query.

    The role is read live (not stored on the key) so demoting or removing a member changes what
    their keys may do on the very next request. ``role`` is ``None`` for a non-member.

    Every request without the shared key cache (no Redis) runs it: its SQL is built by the ORM
    once (hosting/queries.py) and run with each key id.
    """
    found = api_key_context_row(key_id=key_id)
    return None if found is None else found.instance()


@dataclass(frozen=True)
class KeyContextRow:
    """The row ``api_key_with_context`` reads, as the database gave it (``values``: every
    column of the key, its user and its account, and the role; None when the ORM read it), and
    the key it stands for, built on demand (``instance()``)."""

    values: tuple | None
    instance: Callable[[], ApiKey]


def api_key_context_row(*, key_id: str) -> KeyContextRow | None:
    """``api_key_with_context``'s row before its instances are built (None: no such key), so a
    caller that built them from the very same row before can reuse them (accounts/key_cache.py)."""
    using = router.db_for_read(ApiKey)
    query = compiled(
        ("api_key_with_context", using, connections[using].vendor),
        lambda: compile_queryset(_key_with_context(Param("key_id")), paged=False),
    )
    if query is None:
        api_key = _key_with_context(key_id).first()
        return None if api_key is None else KeyContextRow(None, lambda: api_key)
    rows = query.fetched({"key_id": key_id}, using=using)
    if not rows:
        return None
    return KeyContextRow(tuple(rows[0]), lambda: query.built(rows, using)[0])


def _key_with_context(key_id) -> QuerySet[ApiKey]:
    role = Membership.objects.filter(account=OuterRef("account_id"), user=OuterRef("user_id"))
    return (
        ApiKey.objects.select_related("user", "account")
        .annotate(role=Subquery(role.values("role")[:1]))
        .filter(key_id=key_id)
        .order_by("pk")[:1]
    )


def role_in(*, account: Account, user: User | None) -> str | None:
    """The user's current role in the account, or None for a non-member (or no user: a system
    change)."""
    if user is None:
        return None
    return (
        Membership.objects.filter(account=account, user=user).values_list("role", flat=True).first()
    )


def api_keys_visible_to(*, account: Account, user: User, role: str | None) -> QuerySet[ApiKey]:
    """Owners and admins see every key of the account; everyone else only their own."""
    keys = ApiKey.objects.filter(account=account).select_related("user", "created_by")
    if role_can(role, Right.MANAGE_ALL_KEYS):
        return keys
    return keys.filter(user=user)


def members_of_account(*, account: Account) -> QuerySet[Membership]:
    return (
        Membership.objects.filter(account=account)
        .select_related("user")
        .order_by("created_at", "id")
    )


def invitations_of_account(*, account: Account) -> QuerySet[Invitation]:
    return Invitation.objects.filter(account=account).select_related("invited_by")


def accounts_of_user(*, user: User) -> QuerySet[Account]:
    return Account.objects.filter(memberships__user=user).order_by("name", "id")


def customers_with_owners() -> QuerySet[Account]:
    """Every account with what the customer representation needs, in a fixed number of queries."""
    owners = Prefetch(
        "memberships",
        queryset=Membership.objects.filter(role=Role.OWNER)
        .select_related("user")
        .order_by("created_at", "id"),
        to_attr="owner_memberships",
    )
    return (
        Account.objects.annotate(member_count=Count("memberships"))
        .prefetch_related(owners)
        .order_by("-created_at", "-id")
    )


def ssh_keys_of(*, user: User) -> QuerySet[SshKey]:
    """A user's SSH keys, newest first."""
    return SshKey.objects.filter(user=user).order_by("-created_at", "-id")


# allauth's authenticator types that are a second factor: an authenticator app, a passkey.
# Recovery codes back one up; alone (left when the factor goes, which allauth then deletes too)
# they are none.
SECOND_FACTOR_TYPES = ("totp", "webauthn")


def user_has_second_factor(user) -> bool:
    """Whether ``user`` has a second factor set up."""
    from allauth.mfa.models import Authenticator

    return Authenticator.objects.filter(user_id=user.pk, type__in=SECOND_FACTOR_TYPES).exists()


def users_with_second_factor(user_ids: list[str]) -> set[str]:
    """Which of ``user_ids`` have a second factor set up."""
    from allauth.mfa.models import Authenticator

    return set(
        Authenticator.objects.filter(user_id__in=user_ids, type__in=SECOND_FACTOR_TYPES)
        .values_list("user_id", flat=True)
        .distinct()
    )
