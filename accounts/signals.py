"""Cache invalidation for API key lookups (accounts/key_cache.py).

Signals, not services, because every way of changing these rows must invalidate — services,
Django admin forms, management commands — and this is bookkeeping of a cache, not a business
rule. The version is bumped at once and again after commit: the second bump defeats a request
that read the old rows and cached them between the change and its commit.
"""

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from accounts import key_cache
from accounts.key_cache import api_key_cache_invalidate, api_keys_of_member_invalidate
from accounts.models import Account, ApiKey, Membership, User


def _invalidate(key_ids: list[str]) -> None:
    if key_ids:
        api_key_cache_invalidate(key_ids)
        transaction.on_commit(lambda: api_key_cache_invalidate(key_ids))


def _invalidate_keys_of(keys_queryset) -> None:
    if key_cache.enabled():
        _invalidate(list(keys_queryset.values_list("key_id", flat=True)))


@receiver([post_save, post_delete], sender=ApiKey)
def _api_key_changed(sender, instance: ApiKey, **kwargs) -> None:
    if key_cache.enabled():
        _invalidate([instance.key_id])


@receiver([post_save, post_delete], sender=Membership)
def _membership_changed(sender, instance: Membership, **kwargs) -> None:
    api_keys_of_member_invalidate(account_id=instance.account_id, user_id=instance.user_id)


@receiver(post_save, sender=User)
def _user_changed(sender, instance: User, **kwargs) -> None:
    _invalidate_keys_of(ApiKey.objects.filter(user_id=instance.pk))


@receiver(post_save, sender=Account)
def _account_changed(sender, instance: Account, **kwargs) -> None:
    _invalidate_keys_of(ApiKey.objects.filter(account_id=instance.pk))


# -- Second factors (django-allauth's MFA): each change, and each wrong code, an event ----------


def _factor_changed(change: str):
    def receive(sender, request=None, user=None, authenticator=None, **kwargs) -> None:
        from accounts.services import factor_event_record
        from hosting.http import client_ip

        if user is None or authenticator is None:
            return
        ip = client_ip(request) if request is not None else None
        factor_event_record(user=user, change=change, factor=authenticator.type, ip=ip)

    return receive


def _signed_in(sender, request=None, user=None, **kwargs) -> None:
    """Each sign-in through allauth's flow (the dashboard's and admin's, after any factor): an
    event, and an e-mail when the device is new to the person."""
    from allauth.mfa.webauthn.internal.flows import did_use_passwordless_login
    from allauth.usersessions.models import UserSession

    from accounts.services import sign_in_record
    from hosting.http import client_ip

    if request is None or user is None:
        return
    user_agent = request.META.get("HTTP_USER_AGENT", "")
    current = request.session.session_key
    others = UserSession.objects.filter(user=user).exclude(session_key=current)
    new_device = others.exists() and not others.filter(user_agent=user_agent[:200]).exists()
    sociallogin = kwargs.get("sociallogin")  # a single sign-on's
    provider = sociallogin.account.provider if sociallogin is not None else ""
    method = "sso" if provider else "password"
    if not provider and did_use_passwordless_login(request, user):
        method = "passkey"  # "Sign in with a passkey", no password
    sign_in_record(
        user=user,
        ip=client_ip(request),
        user_agent=user_agent,
        new_device=new_device,
        method=method,
        provider=provider,
    )


def _passkey_used(sender, request=None, user=None, authenticator=None, **kwargs) -> None:
    """A passkey that signed its person in without a password (user verification: its PIN or
    biometrics) is, as a password typed at sign-in is (accounts/sign_in.py), a recent sign-in
    for the sensitive actions that ask for one."""
    from allauth.account.internal.flows.login import record_authentication

    if not kwargs.get("passwordless") or request is None or user is None or authenticator is None:
        return
    record_authentication(
        request,
        user,
        "mfa",
        id=authenticator.pk,
        type=authenticator.type,
        passwordless=True,
        reauthenticated=True,
    )


def _sso_linked(sender, request=None, sociallogin=None, **kwargs) -> None:
    """An identity at a single sign-on provider linked (Profile, or at a first sign-in with
    the host's provider: accounts/sso_adapter.py): an event."""
    from accounts.services.sso import AUTO_CONNECTED, sso_link_record
    from hosting.http import client_ip

    if sociallogin is None or sociallogin.user is None:
        return
    sso_link_record(
        user=sociallogin.user,
        provider=sociallogin.account.provider,
        uid=sociallogin.account.uid,
        change="linked",
        automatic=bool(sociallogin.state.get(AUTO_CONNECTED)),
        ip=client_ip(request) if request is not None else None,
    )


def _sso_unlinked(sender, request=None, socialaccount=None, **kwargs) -> None:
    from accounts.services import sso_link_record
    from hosting.http import client_ip

    if socialaccount is None:
        return
    sso_link_record(
        user=socialaccount.user,
        provider=socialaccount.provider,
        uid=socialaccount.uid,
        change="unlinked",
        automatic=False,
        ip=client_ip(request) if request is not None else None,
    )


# When a session was last written as seen (allauth's UserSession: its "last seen" on
# Profile → Security → Sessions), kept in the session itself (accounts.middleware).
SESSION_SEEN_KEY = "hms_session_seen_at"
SESSION_SEEN_EVERY_SECONDS = 300
# When this session's person set a second factor up (so the session has passed it).
FACTOR_ADDED_SESSION_KEY = "second_factor_added_at"


def _session_seen(sender, request=None, user=None, **kwargs) -> None:
    """Any sign-in (Django's signal: the dashboard's, admin's, a new account's, a test's
    force_login): the session is listed at once, seen now."""
    import time

    from allauth.usersessions.models import UserSession

    if request is None or user is None or getattr(request, "session", None) is None:
        return
    UserSession.objects.create_from_request(request, user=user, session=request.session)
    request.session[SESSION_SEEN_KEY] = time.time()


def _factor_set_up(sender, instance=None, created=False, **kwargs) -> None:
    """The session that set a factor up has passed it: its person just typed it
    (accounts/second_factor.py reads this). On the row's save, in the request (allauth's own
    signal for it is sent after commit, when the session may already be saved)."""
    import time

    from allauth.core import context

    from accounts.selectors import SECOND_FACTOR_TYPES

    if not created or instance is None or instance.type not in SECOND_FACTOR_TYPES:
        return
    request = context.request
    person = getattr(request, "user", None)
    if request is not None and person is not None and person.pk == instance.user_id:
        request.session[FACTOR_ADDED_SESSION_KEY] = time.time()


def connect_factor_events() -> None:
    """Called from AccountsConfig.ready: allauth's signals, once its models are loaded."""
    from allauth.account.signals import user_logged_in
    from allauth.mfa import signals as mfa
    from allauth.mfa.models import Authenticator
    from allauth.socialaccount import signals as social
    from django.contrib.auth.signals import user_logged_in as django_logged_in

    user_logged_in.connect(_signed_in, weak=False, dispatch_uid="signed-in")
    mfa.authenticator_used.connect(_passkey_used, weak=False, dispatch_uid="passkey-used")
    social.social_account_added.connect(_sso_linked, weak=False, dispatch_uid="sso-linked")
    social.social_account_removed.connect(_sso_unlinked, weak=False, dispatch_uid="sso-unlinked")
    django_logged_in.connect(_session_seen, weak=False, dispatch_uid="session-seen")

    post_save.connect(
        _factor_set_up, sender=Authenticator, weak=False, dispatch_uid="factor-set-up"
    )
    for signal, change in (
        (mfa.authenticator_added, "added"),
        (mfa.authenticator_removed, "removed"),
        (mfa.authenticator_reset, "reset"),
        (mfa.authentication_failed, "failed"),
    ):
        signal.connect(_factor_changed(change), weak=False, dispatch_uid=f"factor-{change}")
