"""How an event is shown: its public representation (CONTRACT §9), as the API's event log
answers with it (hosting/representations.py says why a representation is a plain function).

An event never changes once recorded, so its ``data`` is shown as stored, not copied.
"""

from typing import Any

from events.models import Event
from hosting.representations import timestamp


def event_representation(event: Event) -> dict[str, Any]:
    """An event with who caused it; staff are shown without user, key or address."""
    if event.caused_by_staff:
        actor: dict[str, Any] = {"user": None, "api_key": None, "ip": None, "staff": True}
    else:
        actor = {
            "user": event.actor_user_id,
            "api_key": event.actor_api_key_id,
            "ip": event.actor_ip,
            "staff": False,
        }
    return {
        "id": event.id,
        "type": event.type,
        "created_at": timestamp(event.created_at),
        "data": event.data,
        "actor": actor,
    }
