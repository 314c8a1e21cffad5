"""The OpenAPI documentation of the servers API: what the server and bot viewsets share."""

from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import serializers

from events.api.serializers import EventSerializer
from hosting.api.schema import INSTANCE_CONFLICT, envelope
from servers.api.serializers import (
    ActionSerializer,
    BulkResultSerializer,
)

ACTION_RESPONSE = OpenApiResponse(
    envelope("action", ActionSerializer(), name="ActionEnvelope"),
    description="Accepted: the action runs in the background; poll `Location`.",
)


_BULK_BODY_NOTE = (
    "Runs the same power action on up to 100 {kind}s. Answers 200 with one result per id, in the "
    "order sent: `accepted` with its `action`, or the `error` that id alone would have got."
)


def instance_schema(kind: str, tag: str, detail, create_body, update_body, bulk_body, examples=()):
    """The documentation of a server or bot viewset: the two share their endpoints."""
    plural = f"{kind}s"
    detail_envelope = envelope(kind, detail(), name=f"{kind.title()}Envelope")
    return extend_schema_view(
        list=extend_schema(
            summary=f"List {plural}",
            description=f"The account's {plural}, newest first. List filters (`status`, "
            "`ordering`) take one value, a comma-separated list, or the parameter repeated.",
            tags=[tag],
            examples=list(examples),
        ),
        retrieve=extend_schema(summary=f"Get a {kind}", tags=[tag], responses=detail_envelope),
        create=extend_schema(
            summary=f"Create a {kind}",
            description=f"201 with `data.{kind}` in status `provisioning`; the worker provisions "
            "and installs it. 422 `quota_exceeded` past the account's limits; 422 "
            f"`plan_required` past its unbilled allowance (what it may run without a plan, "
            f"`GET /v1/account`): such a {kind} is ordered as a plan (`POST /v1/subscriptions`).",
            tags=[tag],
            request=create_body,
            responses={201: detail_envelope},
        ),
        partial_update=extend_schema(
            summary=f"Change a {kind}",
            description="Changes to resources, variables and start settings of a running "
            f"{kind} take effect after a restart: `restart_required` says so. 409 "
            f"`invalid_state` while the {kind} is being deleted. A {kind} without a plan grows "
            "within the account's unbilled allowance (422 `plan_required` beyond it). A "
            f"{kind} made from an order is bound by its plan: resources above the plan's are "
            "422 `plan_limit` "
            "(`details.field`, `details.limit`, `details.subscription`); more comes with a plan "
            "change (`POST /v1/subscriptions/{id}/preview-change`, then `change`).",
            tags=[tag],
            request=update_body,
            responses={
                200: inline_serializer(
                    name=f"{kind.title()}UpdateEnvelope",
                    fields={
                        kind: detail(),
                        "restart_required": serializers.BooleanField(),
                        "restart_required_for": serializers.ListField(
                            child=serializers.CharField()
                        ),
                    },
                ),
                409: INSTANCE_CONFLICT,
            },
        ),
        destroy=extend_schema(
            summary=f"Delete a {kind}",
            description=f"202 with the delete action; the {kind} is gone (404) once it finishes. "
            "409 `invalid_state` when it is already being deleted, `action_in_progress` while "
            f"another action runs. A {kind} made from an order ends its subscription now, as "
            "cancelling it now would (`subscription.canceled`).",
            tags=[tag],
            responses={202: ACTION_RESPONSE, 409: INSTANCE_CONFLICT},
        ),
        action_list=extend_schema(
            summary=f"List a {kind}'s actions",
            tags=[tag],
            responses=ActionSerializer(many=True),
        ),
        bulk_action=extend_schema(
            operation_id=f"{plural}_bulk_action",
            summary=f"Run a power action on many {plural}",
            description=_BULK_BODY_NOTE.format(kind=kind),
            tags=[tag],
            request=bulk_body,
            responses=envelope(
                "results", BulkResultSerializer(many=True), name=f"{kind.title()}BulkResults"
            ),
        ),
        activity=extend_schema(
            summary=f"A {kind}'s history",
            description=f"Every event of this {kind} and its actions, newest first.",
            tags=[tag],
            responses=EventSerializer(many=True),
        ),
    )
