"""Passkey sign-ins that signed nobody in, in the event log."""

from accounts.actors import Actor
from accounts.models import User
from accounts.services.users import _record_for_person


def passkey_failure_record(*, user: User | None, reason: str, ip: str | None) -> None:
    """Note a passkey offered to sign in without a password that did not sign anyone in (a
    passkey registered to nobody here, or removed; a stale challenge; a deactivated person;
    staff under STAFF_SSO_ONLY) as ``user.login_failed`` with ``method: "passkey"``: in the
    accounts of the person the passkey names, if any, else in the staff log."""
    subject = {
        "id": user.id if user else "",
        "email": user.email if user else "",
        "method": "passkey",
        "reason": reason[:200],
    }
    _record_for_person(user, type="user.login_failed", obj=subject, actor=Actor(ip=ip))
