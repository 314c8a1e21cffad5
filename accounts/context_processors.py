"""Template context of every dashboard page: the current account, role, rights and switcher
(the desk's link is support's: ``support.context_processors``)."""

from accounts.roles import ROLE_SCOPES, Right, role_can
from accounts.selectors import accounts_of_user


def dashboard(request) -> dict:
    membership = getattr(request, "membership", None)
    if membership is None:
        return {"current_account": None, "current_membership": None}
    role = membership.role
    return {
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
