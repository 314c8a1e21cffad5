"""Query filters of the account, member, invitation, API key and staff customer lists, and of
the dashboard's API keys page."""

import django_filters
from django.db.models import Exists, OuterRef, Q
from django.utils.translation import gettext_lazy

from accounts.models import (
    Account,
    ApiKey,
    ApiKeyQuerySet,
    Invitation,
    InvitationQuerySet,
    Membership,
)
from accounts.roles import Role
from hosting.api.filters import ChoiceInFilter, CreatedRangeFilterSet, StableOrderingFilter


class MemberFilter(django_filters.FilterSet):
    role = ChoiceInFilter(
        choices=Role.choices, help_text="Only members with this role, or any of a comma list."
    )
    ordering = StableOrderingFilter(
        fields=(("created_at", "joined_at"), ("user__email", "email"), ("role", "role")),
        help_text="joined_at, email or role, '-' for descending. Default: -joined_at.",
    )

    class Meta:
        model = Membership
        fields: list[str] = []


class InvitationFilter(django_filters.FilterSet):
    status = ChoiceInFilter(
        choices=[(status, status) for status in InvitationQuerySet.STATUSES],
        method="filter_status",
        help_text="Only invitations in this status, or in any of a comma-separated list.",
    )
    ordering = StableOrderingFilter(
        fields=(("created_at", "created_at"), ("email", "email"), ("expires_at", "expires_at")),
        help_text="created_at, email or expires_at, '-' for descending. Default: -created_at.",
    )

    class Meta:
        model = Invitation
        fields: list[str] = []

    def filter_status(self, queryset, name, value):
        return queryset.with_status(value)


class ApiKeyFilter(django_filters.FilterSet):
    status = ChoiceInFilter(
        choices=[(status, status) for status in ApiKeyQuerySet.STATUSES],
        method="filter_status",
        help_text="Only keys in this status, or in any of a comma-separated list. A rotated key "
        "is active until its grace period ends.",
    )
    ordering = StableOrderingFilter(
        fields=(("created_at", "created_at"), ("name", "name"), ("expires_at", "expires_at")),
        help_text="created_at, name or expires_at, '-' for descending. Default: -created_at.",
    )

    class Meta:
        model = ApiKey
        fields: list[str] = []

    def filter_status(self, queryset, name, value):
        return queryset.with_status(value)


class CustomerFilter(CreatedRangeFilterSet):
    """Query filters of ``GET /v1/admin/customers``."""

    status = ChoiceInFilter(
        choices=Account.Status.choices,
        help_text="Only customers in this status, or in any of a comma-separated list.",
    )
    search = django_filters.CharFilter(
        method="filter_search",
        help_text="Case-insensitive match on the name or an owner's e-mail, or an exact id.",
    )
    ordering = StableOrderingFilter(
        fields=(("created_at", "created_at"), ("name", "name"), ("status", "status")),
        help_text="created_at, name or status, '-' for descending. Default: -created_at.",
    )

    class Meta:
        model = Account
        fields: list[str] = []

    def filter_search(self, queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        if value.startswith("acct_"):
            return queryset.filter(id=value)
        # EXISTS rather than a join, so the member count annotated on the list stays right.
        owner_matches = Membership.objects.filter(
            account=OuterRef("pk"), role=Role.OWNER, user__email__icontains=value
        )
        return queryset.filter(Q(name__icontains=value) | Exists(owner_matches))


# --- Dashboard lists (hosting/dashboard/lists.py): one value each, chosen from a menu ---------


API_KEY_STATUS_LABELS = {
    "active": gettext_lazy("Active"),
    "expired": gettext_lazy("Expired"),
    "revoked": gettext_lazy("Revoked"),
}


class ApiKeyListFilter(django_filters.FilterSet):
    """The API keys page: keys in one status (``ApiKeyFilter`` takes comma lists)."""

    status = django_filters.ChoiceFilter(
        choices=[(status, API_KEY_STATUS_LABELS[status]) for status in ApiKeyQuerySet.STATUSES],
        method="filter_status",
        empty_label=gettext_lazy("Any status"),
        # A filter with a method has no name django-filter can show otherwise.
        label=gettext_lazy("Status"),
    )

    class Meta:
        model = ApiKey
        fields: list[str] = []

    def filter_status(self, queryset, name, value):
        return queryset.with_status([value])
