"""The dashboard's current account: ``request.account`` and ``request.membership``."""

from accounts.models import Membership

SESSION_ACCOUNT_KEY = "account_id"


def current_membership(request) -> Membership | None:
    """The membership of the account chosen in the session, else the user's first one.

    A stale choice (the user left or was removed) falls back silently, so no page ever shows an
    account the user no longer belongs to.
    """
    memberships = Membership.objects.select_related("account").filter(user=request.user)
    chosen = request.session.get(SESSION_ACCOUNT_KEY)
    membership = memberships.filter(account_id=chosen).first() if chosen else None
    if membership is None:
        membership = memberships.order_by("account__name", "account_id").first()
    return membership


class CurrentAccountMiddleware:
    """Set ``request.account`` / ``request.membership`` for signed-in users (None otherwise).

    Object pages look everything up through ``request.account``, so another account's keys,
    members and invitations are simply not found.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.membership = None
        # API requests authenticate with keys, never with the dashboard's session.
        if not request.path_info.startswith("/v1/") and request.user.is_authenticated:
            request.membership = current_membership(request)
        request.account = request.membership.account if request.membership else None
        return self.get_response(request)
