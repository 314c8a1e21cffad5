"""A person's own profile, and what a failed sign-in leaves behind."""

from django.conf import settings
from django.core.cache import cache
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.utils.translation import gettext as _

from accounts.actors import Actor
from accounts.models import Account, User
from events.services import changed_attributes, record_event
from hosting.errors import (
    ValidationFailed,
)
from hosting.i18n import in_language_of


@transaction.atomic
def user_update_profile(
    *, user: User, name: str, email: str, actor: Actor, language: str | None = None
) -> User:
    """Change a user's name, e-mail or language (None: leave it); a change is noted in each of
    their accounts."""
    email = email.strip().lower()
    if User.objects.filter(email__iexact=email).exclude(pk=user.pk).exists():
        raise ValidationFailed.field("email", "unique", _("Another user has this e-mail address."))
    if language is not None and language and language not in dict(settings.LANGUAGES):
        raise ValidationFailed.field("language", "invalid", _("Not a language of the dashboard."))
    user = User.objects.select_for_update().get(pk=user.pk)
    before = {"id": user.id, "email": user.email, "name": user.name, "language": user.language}
    user.name, user.email = name.strip(), email
    if language is not None:
        user.language = language
    user.save(update_fields=["name", "email", "language"])
    after = {"id": user.id, "email": user.email, "name": user.name, "language": user.language}
    if previous := changed_attributes(before, after):
        for account in Account.objects.filter(memberships__user=user):
            record_event(
                type="user.updated",
                account=account,
                object_type="user",
                obj=after,
                actor=actor,
                previous_attributes=previous,
            )
    return user


def _record_for_person(user: User | None, *, type: str, obj: dict, actor: Actor) -> None:
    """One event of a person in each of their accounts' logs (or the staff log, none)."""
    accounts: list[Account | None] = (
        list(Account.objects.filter(memberships__user=user)) if user else []
    )
    for account in accounts or [None]:
        record_event(type=type, account=account, object_type="user", obj=obj, actor=actor)


def login_failure_record(*, email: str, ip: str | None) -> None:
    """Note a failed sign-in in the event log of every account the address belongs to."""
    user = User.objects.filter(email__iexact=email.strip()).first()
    subject = {"id": user.id if user else "", "email": email.strip().lower()[:254]}
    _record_for_person(user, type="user.login_failed", obj=subject, actor=Actor(ip=ip))


# What a change of a person's second factors is called in the event log (allauth's
# authenticator types: "totp", "recovery_codes", "webauthn").
FACTOR_EVENTS = {"added": "user.factor_added", "removed": "user.factor_removed"}
FACTOR_EVENTS |= {"reset": "user.factor_reset", "failed": "user.factor_failed"}


def factor_event_record(*, user: User, change: str, factor: str, ip: str | None) -> None:
    """Note a second factor set up, removed, renewed (recovery codes) or a wrong code typed at
    sign-in, in the event log of each of the person's accounts (audit, webhooks)."""
    subject = {"id": user.id, "email": user.email, "factor": factor}
    actor = Actor(user=user, ip=ip) if change != "failed" else Actor(ip=ip)
    _record_for_person(user, type=FACTOR_EVENTS[change], obj=subject, actor=actor)


def lockout_notify(*, email: str, retry_after: int, ip: str | None) -> None:
    """E-mail the person whose sign-in is held back by too many attempts (password or factor
    codes), once a window: someone may be guessing. Nothing for an address nobody has."""
    user = User.objects.filter(email__iexact=email.strip()).first()
    if user is None or not cache.add(f"lockout-mail:{user.pk}", 1, timeout=max(retry_after, 60)):
        return
    with in_language_of(user):
        subject = _("Too many sign-in attempts on your account")
        message = render_to_string(
            "accounts/email/lockout.txt",
            {
                "user": user,
                "ip": ip or _("an unknown address"),
                "minutes": max(1, retry_after // 60),
                "reset_url": f"{settings.SITE_URL}/password/reset",
            },
        )
    send_mail(subject=subject, message=message, from_email=None, recipient_list=[user.email])


def sign_in_record(
    *,
    user: User,
    ip: str | None,
    user_agent: str,
    new_device: bool,
    method: str = "password",
    provider: str = "",
) -> None:
    """Note a sign-in (``user.signed_in``, with its address, device and method: ``password``
    or ``sso`` with its ``provider``) in each of the person's accounts; from a device they
    never signed in from before (and not their first sign-in), e-mail them: it may not be
    them."""
    person = {"id": user.id, "email": user.email, "user_agent": user_agent[:200]}
    obj = person | {"new_device": new_device, "method": method}
    if provider:
        obj["provider"] = provider
    _record_for_person(user, type="user.signed_in", obj=obj, actor=Actor(user=user, ip=ip))
    if new_device:
        with in_language_of(user):
            subject = _("A new sign-in to your account")
            message = render_to_string(
                "accounts/email/new_device.txt",
                {
                    "user": user,
                    "ip": ip or _("an unknown address"),
                    "device": user_agent or _("an unknown device"),
                    "sessions_url": f"{settings.SITE_URL}/auth/sessions/",
                },
            )
        send_mail(subject=subject, message=message, from_email=None, recipient_list=[user.email])
