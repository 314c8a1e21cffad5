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


def connect_factor_events() -> None:
    """Called from AccountsConfig.ready: allauth's signals, once its models are loaded."""
    from allauth.mfa import signals as mfa

    for signal, change in (
        (mfa.authenticator_added, "added"),
        (mfa.authenticator_removed, "removed"),
        (mfa.authenticator_reset, "reset"),
        (mfa.authentication_failed, "failed"),
    ):
        signal.connect(_factor_changed(change), weak=False, dispatch_uid=f"factor-{change}")
