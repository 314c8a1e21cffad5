"""The staff API for database hosts (``/v1/admin/database-hosts``): list, register, read,
change and remove the MariaDB/MySQL and PostgreSQL servers customers' databases are made on.

``admin:read`` / ``admin:write``, as the nodes' staff API. The admin password is write-only:
kept encrypted by the service (the admin site's own), never answered. A new address, port,
admin user or password is tried on the host before it is kept (400 ``validation_failed`` with
``connection_failed`` on ``host``); a host is removed only once it holds no database (409).
"""

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.response import Response

from accounts.actors import Actor
from databases.filters import DatabaseHostFilter
from databases.models import DatabaseEngine, DatabaseHost
from databases.representations import database_host_representation
from databases.services import (
    MAX_DATABASES,
    DatabaseHostChanges,
    database_host_create,
    database_host_delete,
    database_host_update,
    database_hosts_with_usage,
)
from hosting.api.schema import envelope, error_doc
from hosting.api.serializers import DeletedSerializer, RepresentedBy, StrictInputSerializer
from hosting.api.views import (
    ApiViewSet,
    EnvelopeListMixin,
    EnvelopeRetrieveMixin,
    created,
    deleted,
    validated,
)
from servers.models import Node, Region

STAFF_READ, STAFF_WRITE = ["admin:read"], ["admin:write"]
TAG = "Staff: database hosts"


class DatabaseHostSerializer(RepresentedBy, serializers.Serializer):
    """A database host as staff see it; never its admin password."""

    @staticmethod
    def represent(database_host: DatabaseHost) -> dict:
        # ``used``: annotated by database_hosts_with_usage, which every answer reads through.
        return database_host_representation(database_host) | {"databases": database_host.used}

    id = serializers.CharField()
    name = serializers.CharField()
    engine = serializers.ChoiceField(choices=DatabaseEngine.choices)
    host = serializers.CharField(help_text="The address the service signs in at.")
    port = serializers.IntegerField()
    public_host = serializers.CharField(
        help_text="The address customers are told to connect to; empty: `host`."
    )
    admin_user = serializers.CharField()
    region = serializers.CharField(
        allow_null=True, help_text="The region it serves; null: every region."
    )
    nodes = serializers.ListField(
        child=serializers.CharField(),
        help_text="The nodes whose servers and bots it serves; empty: every node's.",
    )
    max_databases = serializers.IntegerField()
    active = serializers.BooleanField(help_text="New databases are made on it.")
    databases = serializers.IntegerField(help_text="Customers' databases on it now.")
    created_at = serializers.CharField()


class DatabaseHostWriteFields(StrictInputSerializer):
    """What a create and a change share; each field is checked again by the service."""

    name = serializers.CharField(max_length=100)
    host = serializers.CharField(
        max_length=255,
        help_text="A host name, an IP address, or the folder of a Unix socket (`/run/mysqld`).",
    )
    port = serializers.IntegerField(min_value=1, max_value=65535)
    public_host = serializers.CharField(max_length=255, required=False, allow_blank=True)
    admin_user = serializers.CharField(
        max_length=100,
        help_text="MariaDB: a user with `CREATE USER` and `GRANT OPTION`; PostgreSQL: a role "
        "with `CREATEROLE` and `CREATEDB`.",
    )
    admin_password = serializers.CharField(
        max_length=200,
        allow_blank=True,
        trim_whitespace=False,
        write_only=True,
        help_text="Write-only: kept encrypted, never shown again.",
    )
    region = serializers.SlugRelatedField(
        slug_field="slug",
        queryset=Region.objects.all(),
        allow_null=True,
        required=False,
        help_text="The region it serves; null (the default): every region.",
    )
    nodes = serializers.PrimaryKeyRelatedField(
        queryset=Node.objects.all(),
        many=True,
        required=False,
        help_text="Only the servers and bots of these nodes; empty (the default): every node's.",
    )
    max_databases = serializers.IntegerField(
        min_value=0, max_value=MAX_DATABASES, required=False, help_text="Default: `1000`."
    )
    active = serializers.BooleanField(required=False, help_text="Default: `true`.")


class DatabaseHostCreateSerializer(DatabaseHostWriteFields):
    engine = serializers.ChoiceField(choices=DatabaseEngine.choices)


class DatabaseHostUpdateSerializer(DatabaseHostWriteFields):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False


EXAMPLE = {
    "id": "dbh_7Qw2Er4Ty6Ui8Op0As1Df3Gh",
    "name": "db1 Frankfurt",
    "engine": "mariadb",
    "host": "10.0.4.12",
    "port": 3306,
    "public_host": "db1.eu-central.example.net",
    "admin_user": "hosting_admin",
    "region": "eu-central",
    "nodes": [],
    "max_databases": 1000,
    "active": True,
    "databases": 42,
    "created_at": "2026-11-21T15:04:05Z",
}
CREATE_EXAMPLE = {
    "name": "db1 Frankfurt",
    "engine": "mariadb",
    "host": "10.0.4.12",
    "port": 3306,
    "public_host": "db1.eu-central.example.net",
    "admin_user": "hosting_admin",
    "admin_password": "correct-horse-battery-staple",
    "region": "eu-central",
}
CONNECTION_FAILED = error_doc(
    400,
    "validation_failed",
    "`validation_failed` by field; `connection_failed` on `host`: the service could not sign "
    "in with the address, port, admin user and password given (the host's own reason in the "
    "message), and nothing was kept. Also `invalid_json`, and `invalid_parameter` "
    "(details.parameters) for the `Idempotency-Key` header.",
    'Could not sign in to 10.0.4.12:3306 as hosting_admin: (1045, "Access denied for user '
    "'hosting_admin'@'10.0.4.1' (using password: YES)\")",
)
STILL_USED = error_doc(
    409,
    "conflict",
    "`conflict` (`details.databases`): customers' databases are still on it.",
    "db1 Frankfurt still holds 42 databases; they go when their servers and bots delete them "
    "(or staff drop them).",
    {"databases": 42},
)
_ONE = envelope("database_host", DatabaseHostSerializer(), name="DatabaseHostEnvelope")


@extend_schema_view(
    list=extend_schema(
        summary="List database hosts",
        description="Every database host, newest first, with how many databases each holds.",
        tags=[TAG],
        examples=[OpenApiExample("A host", value=EXAMPLE, response_only=True)],
    ),
    retrieve=extend_schema(
        summary="Get a database host",
        tags=[TAG],
        responses=_ONE,
        examples=[OpenApiExample("A host", value={"database_host": EXAMPLE}, response_only=True)],
    ),
    create=extend_schema(
        summary="Register a database host",
        description="The service signs in with `admin_user` and `admin_password` first; when "
        "that fails, 400 with `connection_failed` on `host` and nothing is kept. The password "
        "is kept encrypted and never answered. Recorded as the staff event "
        "`database_host.created`.",
        tags=[TAG],
        request=DatabaseHostCreateSerializer,
        responses={201: _ONE, 400: CONNECTION_FAILED},
        examples=[
            OpenApiExample("MariaDB", value=CREATE_EXAMPLE, request_only=True),
            OpenApiExample(
                "Registered",
                value={"database_host": EXAMPLE | {"databases": 0}},
                response_only=True,
            ),
        ],
    ),
    partial_update=extend_schema(
        summary="Change a database host",
        description="A new `host`, `port`, `admin_user` or `admin_password` is tried on the "
        "host before it is kept (400 `connection_failed` on `host`); the other fields are "
        "kept without asking it, so a host that is down can be made inactive. The engine "
        "stays. `database_host.updated`.",
        tags=[TAG],
        request=DatabaseHostUpdateSerializer,
        responses={200: _ONE, 400: CONNECTION_FAILED},
        examples=[
            OpenApiExample("Stop new databases", value={"active": False}, request_only=True),
            OpenApiExample(
                "New admin password",
                value={"admin_password": "another-long-passphrase"},
                request_only=True,
            ),
        ],
    ),
    destroy=extend_schema(
        summary="Remove a database host",
        description="Only once it holds no database: 409 `conflict` until then. "
        "`database_host.deleted`.",
        tags=[TAG],
        responses={200: DeletedSerializer, 409: STILL_USED},
    ),
)
class DatabaseHostViewSet(EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    list_key = "database_hosts"
    resource_key = "database_host"
    serializer_class = DatabaseHostSerializer
    filterset_classes = {"list": DatabaseHostFilter}
    required_scopes = {
        "list": STAFF_READ,
        "retrieve": STAFF_READ,
        "create": STAFF_WRITE,
        "partial_update": STAFF_WRITE,
        "destroy": STAFF_WRITE,
    }

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return DatabaseHost.objects.none()
        return database_hosts_with_usage()

    def _answer(self, database_host: DatabaseHost) -> dict:
        shown = database_hosts_with_usage().get(pk=database_host.pk)
        return {"database_host": DatabaseHostSerializer(shown).data}

    def create(self, request):
        body = dict(validated(DatabaseHostCreateSerializer, request))
        database_host = database_host_create(**body, actor=Actor.from_request(request), verify=True)
        return created(
            request,
            self._answer(database_host),
            f"/v1/admin/database-hosts/{database_host.id}",
        )

    def partial_update(self, request, pk: str):
        database_host = self.get_object()
        if changes := validated(DatabaseHostUpdateSerializer, request):
            database_host = database_host_update(
                database_host=database_host,
                changes=DatabaseHostChanges.of(changes),
                actor=Actor.from_request(request),
            )
        return Response(self._answer(database_host))

    def destroy(self, request, pk: str):
        database_host_delete(database_host=self.get_object(), actor=Actor.from_request(request))
        return deleted(pk)
