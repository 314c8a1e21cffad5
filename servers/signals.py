"""The API key cache keeps each key's per-server grants with its entry (accounts/key_cache.py,
``key_grants_read``): any change to a grant, by a service, the admin or a cascade, makes the
keys of the grant's holder in that account be read afresh on their next request. Signals, not
services, for the reason accounts/signals.py gives. A pending grant (no user yet) is bound by
``grants_bind_on_join`` in the transaction that saves the new membership, whose own signal
invalidates the member's keys after that commit.
"""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from accounts.key_cache import api_keys_of_member_invalidate
from servers.models import ServerGrant


@receiver([post_save, post_delete], sender=ServerGrant)
def _grant_changed(sender, instance: ServerGrant, **kwargs) -> None:
    if instance.user_id:
        api_keys_of_member_invalidate(account_id=instance.account_id, user_id=instance.user_id)
