"""``/v1/servers/{id}/databases…`` and ``/v1/bots/{id}/databases…``: databases through the API.

The server or bot is found in the calling key's account, as its own endpoints find it (404 for
any other); the scopes are the instance's read scope and ``databases:read`` or
``databases:write``; the work is ``databases.services``'. A password is in the answer of the
create and of ``rotate-password`` only: nothing can show it again.
"""

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.actors import Actor
from databases.models import DatabaseEngine, ServerDatabase
from databases.representations import database_representation
from databases.services import (
    database_create,
    database_delete,
    database_of,
    database_password_rotate,
    databases_of,
)
from hosting.api.pagination import PageNumberPagination
from hosting.api.schema import envelope, error_doc
from hosting.api.serializers import DeletedSerializer, RepresentedBy, StrictInputSerializer
from hosting.api.views import ApiViewSet, created, deleted, paginated, validated
from hosting.errors import NotFound
from servers.models import Instance
from servers.selectors import bots_of_account, servers_of_account
from servers.services.permissions import (
    Caller,
    instances_visible_q,
    permission_check,
    request_grants,
)

# --- Serializers --------------------------------------------------------------------------


class DatabaseTargetSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=["server", "bot"])
    id = serializers.CharField()


class DatabaseSerializer(RepresentedBy, serializers.Serializer):
    """A database of a server or bot, and where and as whom to connect (never the password)."""

    represent = staticmethod(database_representation)

    id = serializers.CharField()
    name = serializers.CharField(help_text="The name it was given.")
    target = DatabaseTargetSerializer()
    engine = serializers.ChoiceField(choices=DatabaseEngine.choices)
    host = serializers.CharField(help_text="The address to connect to.")
    port = serializers.IntegerField()
    database = serializers.CharField(help_text="The database's name on the host.")
    username = serializers.CharField()
    remote = serializers.CharField(
        help_text="Where the user may connect from (MariaDB's host part; `%`: anywhere)."
    )
    url = serializers.CharField(help_text="A connection URL without the password.")
    jdbc_url = serializers.CharField(help_text="A JDBC URL without the password.")
    created_at = serializers.CharField()
    password_rotated_at = serializers.CharField(allow_null=True)


class DatabaseWithPasswordSerializer(DatabaseSerializer):
    """The database, with its user's password: shown this once, kept nowhere by the service."""

    password = serializers.CharField(help_text="Shown once: store it now.")


class DatabaseCreateSerializer(StrictInputSerializer):
    name = serializers.RegexField(
        r"^[a-z][a-z0-9_]{0,19}$",
        max_length=20,
        help_text="1 to 20 lowercase letters, digits and underscores, a letter first; the "
        "database's name on the host is it after the server's short id (`s3hx7lm2q_main`).",
    )
    remote = serializers.CharField(
        max_length=60,
        required=False,
        allow_blank=True,
        help_text="MariaDB/MySQL only: where the user may connect from: `%` (anywhere, the "
        "default), an IP address, or an IPv4 prefix ending in `%` (`203.0.113.%`). A "
        "PostgreSQL host decides this itself (its pg_hba.conf): only `%` there.",
    )
    engine = serializers.ChoiceField(
        choices=DatabaseEngine.choices, default=DatabaseEngine.MARIADB, required=False
    )


EXAMPLE = {
    "id": "db_5Kq8Wz2Nr7Tx4Lm9Vc3Hb6Jd",
    "name": "main",
    "target": {"type": "server", "id": "srv_3Hx7Lm2Qw9Zr5Tk1Nc8Vb4Gs"},
    "engine": "mariadb",
    "host": "db1.eu-central.example.net",
    "port": 3306,
    "database": "s3hx7lm2q_main",
    "username": "s3hx7lm2q_k4z9qa",
    "remote": "%",
    "url": "mysql://s3hx7lm2q_k4z9qa@db1.eu-central.example.net:3306/s3hx7lm2q_main",
    "jdbc_url": "jdbc:mariadb://db1.eu-central.example.net:3306/s3hx7lm2q_main"
    "?user=s3hx7lm2q_k4z9qa",
    "created_at": "2026-11-21T15:04:05Z",
    "password_rotated_at": None,
}
WITH_PASSWORD = EXAMPLE | {"password": "V2x9Qm4Lr7Tz1Nc8Vb3Hs6KdPw0Ye5Ju"}
NOT_FOUND = error_doc(
    404, "not_found", "`not_found`: no such server, bot or database here.", "No such database."
)
HOST_DOWN = error_doc(
    503,
    "database_host_unavailable",
    "`database_host_unavailable`: the database host did not answer or refused; nothing was "
    "changed, try again.",
    "The database host db1 did not answer or refused the change; try again in a few minutes.",
)
CREATE_CONFLICT = error_doc(
    409,
    "database_limit_reached",
    "`database_limit_reached` (details.limit): as many databases as the plan allows; "
    "`no_database_host`: no active host of the engine serves its region (or all are full); "
    "`invalid_state`: it is suspended or being deleted; `conflict`: the name was just taken.",
    "This server has 2 databases, as many as its plan allows; delete one first.",
    {"limit": 2},
)
ROTATE_CONFLICT = error_doc(
    409,
    "invalid_state",
    "`invalid_state`: a suspended server's or one being deleted keeps its passwords.",
    "The databases of a server that is suspended keep their passwords.",
)


# One component each, shared by the servers' and the bots' operations.
CREATED_ENVELOPE = envelope(
    "database", DatabaseWithPasswordSerializer(), name="DatabaseCreatedEnvelope"
)
ONE_ENVELOPE = envelope("database", DatabaseSerializer(), name="DatabaseEnvelope")
ROTATED_ENVELOPE = envelope(
    "database", DatabaseWithPasswordSerializer(), name="DatabasePasswordEnvelope"
)


# --- Views --------------------------------------------------------------------------------


class InstanceDatabaseViewSet(ApiViewSet):
    """The databases of one server or bot (``kind``)."""

    kind: str
    lookup_url_kwarg = "database_id"
    pagination_class = PageNumberPagination.for_key("databases")
    serializer_class = DatabaseSerializer

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        read = f"{cls.kind}s:read"
        cls.required_scopes = {
            "list": [read, "databases:read"],
            "retrieve": [read, "databases:read"],
            "create": [read, "databases:write"],
            "destroy": [read, "databases:write"],
            "rotate_password": [read, "databases:write"],
        }

    def get_queryset(self):
        return ServerDatabase.objects.none()  # the schema's; every action asks the services

    def instance(self) -> Instance:
        # Who may do what here is the instances' one answer: role and per-server grants, within
        # the key's scopes (servers/services/permissions.py); a guest without a grant sees none.
        caller = Caller.of_principal(self.request.auth, request_grants(self.request._request))
        of_account = servers_of_account if self.kind == "server" else bots_of_account
        instance = (
            of_account(account_id=caller.account_id)
            .filter(instances_visible_q(caller, self.kind), pk=self.kwargs["id"])
            .first()
        )
        if instance is None:
            raise NotFound()
        write = self.action in ("create", "destroy", "rotate_password")
        permission_check(caller, instance, "databases.write" if write else "databases.read")
        return instance

    def database(self) -> ServerDatabase:
        return database_of(self.instance(), self.kwargs["database_id"])

    def list(self, request, **kwargs):
        return paginated(self, databases_of(self.instance()), "databases", DatabaseSerializer)

    def create(self, request, **kwargs):
        body = validated(DatabaseCreateSerializer, request)
        database, password = database_create(
            instance=self.instance(), actor=Actor.from_request(request), **body
        )
        shown = DatabaseSerializer(database).data | {"password": password}
        return created(
            request,
            {"database": shown},
            f"/v1/{self.kind}s/{database.instance_id}/databases/{database.id}",
        )

    def retrieve(self, request, **kwargs):
        return Response({"database": DatabaseSerializer(self.database()).data})

    def destroy(self, request, **kwargs):
        database_delete(database=self.database(), actor=Actor.from_request(request))
        return deleted(self.kwargs["database_id"])

    @action(detail=True, methods=["post"], url_path="rotate-password")
    def rotate_password(self, request, **kwargs):
        database, password = database_password_rotate(
            database=self.database(), actor=Actor.from_request(request)
        )
        return Response({"database": DatabaseSerializer(database).data | {"password": password}})


def _schema(kind: str):
    """The operations' documentation for the servers' or the bots' view set."""
    tag = "Servers" if kind == "server" else "Bots"
    read = f"{kind}s:read"

    return extend_schema_view(
        **{
            "list": extend_schema(
                tags=[tag],
                summary="List databases",
                description=f"The {kind}'s databases, newest first. Needs {read} and "
                "databases:read.",
                responses={200: DatabaseSerializer(many=True), 404: NOT_FOUND},
                examples=[OpenApiExample("A database", value=EXAMPLE, response_only=True)],
            ),
            "create": extend_schema(
                tags=[tag],
                summary="Create a database",
                description=f"A database and a user limited to it on the least used database "
                f"host of the engine that serves the {kind}'s region, within the plan's "
                "`database_limit`. The answer is the only one that shows the generated "
                "`password`: it is kept nowhere by the service (`rotate-password` makes a new "
                "one). All or nothing: a host that fails midway is left as it was. Recorded as "
                "`database.created`. Needs databases:write.",
                request=DatabaseCreateSerializer,
                responses={
                    201: CREATED_ENVELOPE,
                    404: NOT_FOUND,
                    409: CREATE_CONFLICT,
                    503: HOST_DOWN,
                },
                examples=[
                    OpenApiExample("MariaDB", value={"name": "main"}, request_only=True),
                    OpenApiExample(
                        "PostgreSQL",
                        value={"name": "stats", "engine": "postgresql"},
                        request_only=True,
                    ),
                    OpenApiExample(
                        "Created", value={"database": WITH_PASSWORD}, response_only=True
                    ),
                ],
            ),
            "retrieve": extend_schema(
                tags=[tag],
                summary="Get a database",
                description="One database and its connection details (no password). Needs "
                "databases:read.",
                responses={
                    200: ONE_ENVELOPE,
                    404: NOT_FOUND,
                },
                examples=[OpenApiExample("MariaDB", value={"database": EXAMPLE})],
            ),
            "destroy": extend_schema(
                tags=[tag],
                summary="Delete a database",
                description="Drops the database and its user on the host (its data is gone), "
                "then `database.deleted`. Needs databases:write.",
                responses={200: DeletedSerializer, 404: NOT_FOUND, 503: HOST_DOWN},
            ),
            "rotate_password": extend_schema(
                tags=[tag],
                summary="Rotate a database's password",
                description="A new generated password for the database's user, shown in this "
                "answer only; the old one stops working at once. `database.password_rotated`. "
                "Needs databases:write.",
                request=None,
                responses={
                    200: ROTATED_ENVELOPE,
                    404: NOT_FOUND,
                    409: ROTATE_CONFLICT,
                    503: HOST_DOWN,
                },
                examples=[
                    OpenApiExample(
                        "Rotated",
                        value={
                            "database": WITH_PASSWORD
                            | {"password_rotated_at": EXAMPLE["created_at"]}
                        },
                        response_only=True,
                    )
                ],
            ),
        }
    )


@_schema("server")
class ServerDatabaseViewSet(InstanceDatabaseViewSet):
    kind = "server"


@_schema("bot")
class BotDatabaseViewSet(InstanceDatabaseViewSet):
    kind = "bot"
