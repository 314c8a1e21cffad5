"""The account's event log: ``GET /v1/events`` and ``GET /v1/events/{id}``."""

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view

from events.api.serializers import EventSerializer
from events.filters import EventFilter
from events.models import Event
from events.selectors import events_visible_to
from events.visibility import visibility_reads_user
from hosting.api.schema import envelope
from hosting.api.views import (
    ApiViewSet,
    CallerScopedMixin,
    EnvelopeListMixin,
    EnvelopeRetrieveMixin,
)

EVENT_EXAMPLE = {
    "id": "evt_7Qm2Lx9Tc4Rb8Nz1Kd5Wf3Hy",
    "type": "server.status_changed",
    "created_at": "2026-11-21T15:04:05Z",
    "data": {
        "object": {
            "id": "srv_4Xb9Qe2LmT0sWc8RkP1nZa7Y",
            "name": "Alpha SMP",
            "game": "minecraft-java",
            "status": "running",
            "created_at": "2026-11-01T12:00:00Z",
        },
        "previous_attributes": {"status": "starting"},
    },
    "actor": {
        "user": "usr_3kTq8ZyW1mLp5Rn2Xv7Bc9Df",
        "api_key": None,
        "ip": "203.0.113.7",
        "staff": False,
    },
}

SCOPE_NOTE = (
    "Needs `webhooks:read`: the event log is the stream webhooks deliver, so it shares their "
    "scope. Each event also needs the right to see its object: `servers:read` for `server.*` and "
    "server actions, `bots:read` for `bot.*` and bot actions, `api_keys:read` for `api_key.*` "
    "(only the caller's own keys unless owner or admin), `account:read` for `member.*`, "
    "`account.*` and `user.updated`, and also owner or admin for `user.login_failed`. Events the "
    "caller may not see are left out of the list, and reading one is 404 `not_found`."
)


@extend_schema_view(
    list=extend_schema(
        summary="List events",
        description="The account's event log, newest first: every change with its object "
        "(`data.object`), the attributes it had before (`data.previous_attributes`) and who "
        "made it. The same events, with the same ids, are what webhooks deliver. Filter by "
        "`type` (exact, `server.*`, or comma-separated), `object_id`, `created_after` and "
        f"`created_before`. {SCOPE_NOTE}",
        examples=[OpenApiExample("A status change", value=EVENT_EXAMPLE, response_only=True)],
        tags=["Events"],
    ),
    retrieve=extend_schema(
        summary="Get an event",
        description=SCOPE_NOTE,
        responses=envelope("event", EventSerializer()),
        examples=[
            OpenApiExample("A status change", value={"event": EVENT_EXAMPLE}, response_only=True)
        ],
        tags=["Events"],
    ),
)
class EventViewSet(CallerScopedMixin, EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    model = Event
    list_key = "events"
    resource_key = "event"
    serializer_class = EventSerializer
    filterset_classes = {"list": EventFilter}
    required_scopes = {"list": ["webhooks:read"], "retrieve": ["webhooks:read"]}
    speculative_list = True  # answered while the key's lookup is on its way (hosting.api.views)

    def caller_queryset(self, principal):
        return events_visible_to(
            account_id=principal.account.id,
            role=principal.role,
            user_id=principal.user.id,
            scopes=principal.scopes,
        ).order_by("-created_at", "-id")

    def list_query(self):
        """Compiled once per shape (EnvelopeListMixin.compiled_pages): the role and scopes
        decide which events are visible, so they are the shape; the user too, for a role that
        sees some events only when they are about its own keys (the user is read inside the
        event's JSON there, which a placeholder cannot stand for)."""
        principal = self.request.auth
        scopes = frozenset(principal.scopes)
        reads_user = visibility_reads_user(role=principal.role, scopes=scopes)
        user_id = principal.user.id if reads_user else None

        def base(param):
            return events_visible_to(
                account_id=param("account_id"), role=principal.role, user_id=user_id, scopes=scopes
            ).order_by("-created_at", "-id")

        return base, {"account_id": principal.account.id}, (principal.role, scopes, user_id)
