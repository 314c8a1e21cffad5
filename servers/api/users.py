"""Sub-users of a server or bot: ``/v1/servers/{id}/users`` (and ``/v1/bots/{id}/users``)."""

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.actors import Actor
from hosting.api.pagination import PageNumberPagination
from hosting.api.schema import CONFLICT, envelope, error_doc
from hosting.api.serializers import DeletedSerializer, RepresentedBy, StrictInputSerializer
from hosting.api.views import paginated, validated
from servers.representations import grant_representation
from servers.services.grants import grant_create, grant_delete, grant_of, grant_update, grants_of
from servers.services.permissions import PERMISSION_NAMES, PERMISSIONS, PRESETS

GRANT_ID = r"(?P<grant_id>grant_[A-Za-z0-9]{1,60})"
PERMISSION_LIST = "; ".join(f"`{name}`: {text}" for name, text in PERMISSIONS.items())
PRESET_LIST = "; ".join(
    f"{label}: {', '.join(f'`{name}`' for name in names)}"
    for label, names in (PRESETS[key] for key in PRESETS if key != "full")
)


class GrantTargetSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=["server", "bot"])
    id = serializers.CharField()


class GrantSerializer(RepresentedBy, serializers.Serializer):
    """A sub-user: a person and what they may do on this server or bot."""

    represent = staticmethod(grant_representation)

    id = serializers.CharField()
    target = GrantTargetSerializer()
    status = serializers.ChoiceField(
        choices=["active", "invited"],
        help_text="`invited`: the e-mail was invited and has not joined yet.",
    )
    user_id = serializers.CharField(allow_null=True)
    email = serializers.EmailField()
    name = serializers.CharField(allow_blank=True)
    invitation_id = serializers.CharField(allow_null=True)
    permissions = serializers.ListField(child=serializers.ChoiceField(choices=PERMISSION_NAMES))
    created_at = serializers.CharField()
    updated_at = serializers.CharField()


def _permissions_field(**options) -> serializers.ListField:
    return serializers.ListField(
        **options,
        child=serializers.ChoiceField(choices=PERMISSION_NAMES),
        min_length=1,
        max_length=len(PERMISSIONS),
        help_text=f"What they may do here. {PERMISSION_LIST}. Presets: {PRESET_LIST}.",
    )


class GrantCreateSerializer(StrictInputSerializer):
    email = serializers.EmailField(max_length=254)
    permissions = _permissions_field()


class GrantUpdateSerializer(StrictInputSerializer):
    permissions = _permissions_field(required=False)


GRANT_EXAMPLE = {
    "id": "grant_5Tq8Wm3Zr7Kx2Nc9Vb4Hs1Ld",
    "target": {"type": "server", "id": "srv_3Hx7Lm2Qw9Zr5Tk1Nc8Vb4Gs"},
    "status": "active",
    "user_id": "usr_9Kd2Wq7Lm4Xr8Tz1Nc3Vb6Hs",
    "email": "moderator@example.com",
    "name": "Mia Moderator",
    "invitation_id": None,
    "permissions": ["console.command", "console.view", "power.restart", "power.start"],
    "created_at": "2026-11-21T15:04:05Z",
    "updated_at": "2026-11-21T15:04:05Z",
}
NOT_FOUND = error_doc(404, "not_found", "`not_found`: no such user here.", "No such user.")
FORBIDDEN = error_doc(
    403,
    "permission_denied",
    "`permission_denied`: only owners and admins manage a server's users.",
    "Only owners and admins can manage a server's users.",
)


def _grant_envelope(name: str):
    return envelope("user", GrantSerializer(), name=name)


class InstanceUsersMixin:
    """Sub-users of a server or bot (``get_object`` of the viewset)."""

    USERS_READ = ("users", "user_detail")
    USERS_WRITE = ("user_create", "user_update", "user_destroy")

    @classmethod
    def user_scopes(cls, read_scope: str) -> dict[str, list[str]]:
        """Each action's scopes: the instance's read scope and account:read or account:write
        (the team's: sub-users are people given rights in the account)."""
        return {name: [read_scope, "account:read"] for name in cls.USERS_READ} | {
            name: [read_scope, "account:write"] for name in cls.USERS_WRITE
        }

    @extend_schema(
        summary="List its users",
        description="The people given permissions on this server or bot beyond their role "
        "(sub-users), members and invited e-mails, newest first. Needs account:read.",
        responses=GrantSerializer(many=True),
        examples=[OpenApiExample("A moderator", value=GRANT_EXAMPLE, response_only=True)],
    )
    # pagination_class: only for the schema, which otherwise documents the view's own list key.
    @action(
        detail=True,
        methods=["get"],
        url_path="users",
        pagination_class=PageNumberPagination.for_key("users"),
    )
    def users(self, request, pk=None):
        return paginated(self, grants_of(self.get_object()), "users", GrantSerializer)

    @extend_schema(
        summary="Add a user",
        description="Gives an e-mail address permissions on this server or bot. A member of "
        "the account gets them at once (`status` `active`); anyone else is e-mailed an "
        "invitation that makes them a guest of the account (a role that opens nothing else) "
        "with these permissions here (`status` `invited` until they join). Recorded as "
        "`server.user_added` (`bot.user_added`). Needs account:write and the owner or admin "
        "role. 409 `conflict` when the person already is a user here.",
        request=GrantCreateSerializer,
        responses={201: _grant_envelope("UserAddedEnvelope"), 403: FORBIDDEN, 409: CONFLICT},
        examples=[
            OpenApiExample(
                "A moderator",
                value={
                    "email": "moderator@example.com",
                    "permissions": ["console.view", "console.command", "power.restart"],
                },
                request_only=True,
            )
        ],
    )
    @users.mapping.post
    def user_create(self, request, pk=None):
        body = validated(GrantCreateSerializer, request)
        grant = grant_create(
            instance=self.get_object(),
            email=body["email"],
            permissions=body["permissions"],
            actor=Actor.from_request(request),
        )
        kind = "server" if grant.server_id else "bot"
        return Response(
            {"user": GrantSerializer(grant).data},
            status=201,
            headers={
                "Location": request.build_absolute_uri(
                    f"/v1/{kind}s/{grant.instance_id}/users/{grant.id}"
                )
            },
        )

    @extend_schema(
        summary="Get a user",
        description="One sub-user of this server or bot. Needs account:read.",
        responses={200: _grant_envelope("UserEnvelope"), 404: NOT_FOUND},
        examples=[OpenApiExample("A moderator", value={"user": GRANT_EXAMPLE}, response_only=True)],
    )
    @action(detail=True, methods=["get"], url_path=f"users/{GRANT_ID}")
    def user_detail(self, request, pk=None, grant_id=None):
        grant = grant_of(self.get_object(), grant_id)
        return Response({"user": GrantSerializer(grant).data})

    @extend_schema(
        summary="Change a user's permissions",
        description="Replaces the permissions (left out: nothing changes); they apply from "
        "the person's next request (a console already open keeps its token until it expires, "
        "at most `CONSOLE_TOKEN_SECONDS`). Recorded as `server.user_updated`. Needs "
        "account:write and the owner or admin role.",
        request=GrantUpdateSerializer,
        responses={200: _grant_envelope("UserUpdatedEnvelope"), 403: FORBIDDEN, 404: NOT_FOUND},
        examples=[
            OpenApiExample(
                "Files only",
                value={"permissions": ["files.read", "files.write", "sftp"]},
                request_only=True,
            )
        ],
    )
    @user_detail.mapping.patch
    def user_update(self, request, pk=None, grant_id=None):
        body = validated(GrantUpdateSerializer, request)
        grant = grant_update(
            grant=grant_of(self.get_object(), grant_id),
            permissions=body.get("permissions"),
            actor=Actor.from_request(request),
        )
        return Response({"user": GrantSerializer(grant).data})

    @extend_schema(
        summary="Remove a user",
        description="Takes the person's permissions here away at once (a pending invitation "
        "that brought no other grant is withdrawn). Recorded as `server.user_removed`. Needs "
        "account:write and the owner or admin role.",
        request=None,
        responses={200: DeletedSerializer, 403: FORBIDDEN, 404: NOT_FOUND},
    )
    @user_detail.mapping.delete
    def user_destroy(self, request, pk=None, grant_id=None):
        grant_delete(grant=grant_of(self.get_object(), grant_id), actor=Actor.from_request(request))
        return Response({"id": grant_id, "deleted": True})
