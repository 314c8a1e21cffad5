"""Single sign-on in the event log: identities linked and unlinked, and sign-ins refused."""

from accounts.actors import Actor
from accounts.models import User
from accounts.services.users import _record_for_person

# Set in a sign-in's state when the host's provider's verified e-mail linked the identity
# (accounts/sso_adapter.py), for the link event to say so.
AUTO_CONNECTED = "auto_connected"
SSO_LINK_EVENTS = {"linked": "user.sso_linked", "unlinked": "user.sso_unlinked"}


def sso_link_record(
    *, user: User, provider: str, uid: str, change: str, automatic: bool, ip: str | None
) -> None:
    """Note an identity at a single sign-on provider linked to a person (from Profile, or at
    their first sign-in with the host's provider: ``automatic``) or unlinked, in the event log
    of each of their accounts (audit, webhooks)."""
    subject: dict[str, str | bool] = {
        "id": user.id,
        "email": user.email,
        "provider": provider,
        "uid": uid,
    }
    if change == "linked":
        subject["automatic"] = automatic
    _record_for_person(
        user, type=SSO_LINK_EVENTS[change], obj=subject, actor=Actor(user=user, ip=ip)
    )


def sso_failure_record(
    *, provider: str, reason: str, email: str = "", user: User | None = None, ip: str | None
) -> None:
    """Note a sign-in with a provider that did not sign anyone in (a refused ID token, a
    mismatched state, an identity linked to nobody, a staff password under STAFF_SSO_ONLY) as
    ``user.login_failed`` with ``method: "sso"``: in the accounts of the person it names, if
    any, else in the staff log."""
    email = email.strip().lower()[:254]
    if user is None and email:
        user = User.objects.filter(email__iexact=email).first()
    subject = {
        "id": user.id if user else "",
        "email": user.email if user else email,
        "method": "sso",
        "provider": provider,
        "reason": reason[:200],
    }
    _record_for_person(user, type="user.login_failed", obj=subject, actor=Actor(ip=ip))
