"""The dashboard's current account: ``request.account`` and ``request.membership``."""

import time

from accounts.models import Membership
from accounts.signals import SESSION_SEEN_EVERY_SECONDS, SESSION_SEEN_KEY

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


class SessionActivityMiddleware:
    """A signed-in session's "last seen", written at most every 5 minutes rather than on each
    page (allauth's own middleware writes it on every request: a query or two more per page).
    The sign-in writes it first (accounts/signals.py)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        session = getattr(request, "session", None)
        if user is not None and user.is_authenticated and session is not None:
            now = time.time()
            if session.session_key and now - session.get(SESSION_SEEN_KEY, 0) > (
                SESSION_SEEN_EVERY_SECONDS
            ):
                from allauth.usersessions.internal.usersessionkit import track_activity

                track_activity(request, user=user, session=session)
                session[SESSION_SEEN_KEY] = now
        return self.get_response(request)
