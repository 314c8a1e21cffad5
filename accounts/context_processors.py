"""Template context of every dashboard page: the current account, role, rights and switcher."""

from accounts.roles import ROLE_SCOPES, Right, role_can
from accounts.selectors import accounts_of_user
from support.selectors import departments_of_staff


def dashboard(request) -> dict:
    user = getattr(request, "user", None)
    # The staff desk's link, with or without an account of one's own; a callable, so only
    # pages that draw the navigation ask, and only for staff.
    desk = {
        "can_use_desk": lambda: bool(
            user is not None
            and getattr(user, "works_desk", False)
            and departments_of_staff(user).exists()
        )
    }
    membership = getattr(request, "membership", None)
    if membership is None:
        return {"current_account": None, "current_membership": None, **desk}
    role = membership.role
    return {
        **desk,
        "current_account": membership.account,
        "current_membership": membership,
        "can_manage_team": role_can(role, Right.MANAGE_TEAM),
        "can_view_activity": role_can(role, Right.VIEW_ACTIVITY),
        "can_view_webhooks": "webhooks:read" in ROLE_SCOPES.get(role, frozenset()),
        "can_view_billing": "billing:read" in ROLE_SCOPES.get(role, frozenset()),
        "can_order_plans": "billing:write" in ROLE_SCOPES.get(role, frozenset()),
        "can_view_support": "tickets:read" in ROLE_SCOPES.get(role, frozenset()),
        "can_view_analytics": "analytics:read" in ROLE_SCOPES.get(role, frozenset()),
        # A lazy queryset: only pages that draw the switcher run it.
        "user_accounts": accounts_of_user(user=request.user),
    }
