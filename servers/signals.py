"""Bookkeeping that must follow a row's change by any route (services, the admin, cascades).

The API key cache keeps each key's per-server grants with its entry (accounts/key_cache.py,
``key_grants_read``): any change to a grant, by a service, the admin or a cascade, makes the
keys of the grant's holder in that account be read afresh on their next request. Signals, not
services, for the reason accounts/signals.py gives. A pending grant (no user yet) is bound by
``grants_bind_on_join`` in the transaction that saves the new membership, whose own signal
invalidates the member's keys after that commit.
"""

from django.db.models.signals import post_delete, post_save, pre_delete
from django.dispatch import receiver

from accounts.key_cache import api_keys_of_member_invalidate
from servers.models import Allocation, Server, ServerGrant


@receiver([post_save, post_delete], sender=ServerGrant)
def _grant_changed(sender, instance: ServerGrant, **kwargs) -> None:
    if instance.user_id:
        api_keys_of_member_invalidate(account_id=instance.account_id, user_id=instance.user_id)


@receiver(pre_delete, sender=Server)
def _server_deleted(sender, instance: Server, **kwargs) -> None:
    """A server row deleted by any route (a purge, a cascade, a test) gives its allocations back
    to the node's pool as the services' release does: held by nothing, none primary (only a
    held allocation may be primary: the ``allocation_primary_held`` constraint)."""
    Allocation.objects.filter(server=instance).update(
        server=None, is_primary=False, note="", assigned_at=None
    )
