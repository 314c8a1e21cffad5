"""Who caused a change, as every service records it (events, actions, audit)."""

from dataclasses import dataclass

from accounts.models import ApiKey, User
from hosting.http import client_ip


@dataclass(frozen=True)
class Actor:
    """Who caused a change: a person in the dashboard, an API key, or the system (all None)."""

    user: User | None = None
    api_key: ApiKey | None = None
    ip: str | None = None

    @classmethod
    def from_request(cls, request) -> "Actor":
        """The actor of a dashboard request (session user) or an API request (key principal)."""
        principal = getattr(request, "auth", None)
        api_key = getattr(principal, "api_key", None)
        user = getattr(request, "user", None)
        return cls(
            user=user if user is not None and user.is_authenticated else None,
            api_key=api_key,
            ip=client_ip(request),
        )


SYSTEM = Actor()
