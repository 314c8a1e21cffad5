"""Databases of servers and bots on staff's database hosts (issue 31, "Databases per server").

A customer creates a database for a server or bot, within its plan's ``database_limit`` (or
``DATABASE_DEFAULT_LIMIT`` when unbilled): the least used active host of the engine that serves
the instance's region (and node, when the host names nodes) gets a database and a user limited
to it, with a generated password that is answered once and kept nowhere here (the host keeps its
hash; a rotation answers a new one). All or nothing: when the host fails midway, what was made
there is dropped and no row is left. A deleted server's or bot's databases are dropped
``DATABASE_DROP_GRACE_HOURS`` after its deletion, by the housekeeping loop.

The SQL itself is ``databases.engines``'; here: names, limits, the host's choice, the rows and
the events (``database.created``, ``database.password_rotated``, ``database.deleted``).
"""

import ipaddress
import logging
import re
import secrets
import string
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext

from accounts.actors import SYSTEM, Actor
from databases import engines
from databases.models import DatabaseEngine, DatabaseHost, ServerDatabase
from databases.representations import database_host_representation, database_representation
from events.services import changed_attributes, record_event
from hosting.changes import UNSET, Changes, Unset
from hosting.errors import ApplicationError, Conflict, InvalidState, NotFound, ValidationFailed
from hosting.secrets_box import decrypt_secret, encrypt_secret
from servers.models import Bot, Instance, Node, Region, Server
from servers.models import ServerStatus as S
from servers.services.records import instance_locked

logger = logging.getLogger(__name__)

NAME = re.compile(r"^[a-z][a-z0-9_]{0,19}$")
PASSWORD_BYTES = 24  # 32 URL-safe characters
# A MariaDB user's host part: an address, or an IPv4 prefix ending in a % wildcard.
IPV4_WILDCARD = re.compile(r"^(?:\d{1,3}\.){1,3}%$")
CLOSED = (S.SUSPENDED, S.DELETING)


class DatabaseLimitReached(ApplicationError):
    status, code = 409, "database_limit_reached"
    message = gettext_noop("This server has as many databases as its plan allows.")


class NoDatabaseHost(ApplicationError):
    status, code = 409, "no_database_host"
    message = gettext_noop("No database host can take a database for this server now; ask support.")


class DatabaseHostUnavailable(ApplicationError):
    status, code = 503, "database_host_unavailable"
    message = gettext_noop("The database host did not answer; try again in a few minutes.")


# --- Hosts (staff) ----------------------------------------------------------------------------

HOST_TEXT = re.compile(r"^[^\s\x00-\x1f\x7f]{1,255}$")  # an address or a socket's folder
MAX_DATABASES = 1_000_000
# What the service signs in with: a change of one of these is tried on the host before it is kept.
HOST_CONNECTION_FIELDS = frozenset({"host", "port", "admin_user", "admin_password"})


@dataclass(frozen=True, slots=True, kw_only=True)
class DatabaseHostChanges(Changes):
    """What one edit of a database host sets (staff: the admin API). Its engine stays: the
    databases on it were made by that engine."""

    name: str | Unset = UNSET
    host: str | Unset = UNSET
    port: int | Unset = UNSET
    public_host: str | Unset = UNSET
    admin_user: str | Unset = UNSET
    admin_password: str | Unset = UNSET
    region: Region | Unset | None = UNSET
    nodes: list[Node] | Unset = UNSET
    max_databases: int | Unset = UNSET
    active: bool | Unset = UNSET


def _host_event(
    database_host: DatabaseHost, event: str, actor: Actor, previous: dict | None = None
) -> None:
    # Staff's, as the nodes' are: no account's event log or webhooks see them.
    record_event(
        type=f"database_host.{event}",
        account=None,
        object_type="database_host",
        obj=database_host_representation(database_host),
        actor=actor,
        previous_attributes=previous,
    )


def _clean_host_text(field: str, value: str, *, blank: bool = False) -> str:
    value = (value or "").strip()
    if (blank and not value) or HOST_TEXT.fullmatch(value):
        return value
    raise ValidationFailed.field(
        field,
        "invalid",
        _("%(field)s is a host name, an IP address or a socket's folder.") % {"field": field},
    )


def _clean_host_fields(database_host: DatabaseHost) -> None:
    """Check what staff typed, before anything is tried on the host or saved."""
    database_host.name = (database_host.name or "").strip()
    if not 0 < len(database_host.name) <= 100:
        raise ValidationFailed.field("name", "required", _("A name of 1 to 100 characters."))
    taken = DatabaseHost.objects.filter(name=database_host.name).exclude(pk=database_host.pk)
    if taken.exists():
        raise ValidationFailed.field(
            "name",
            "unique",
            _("A database host is named %(name)s already.") % {"name": database_host.name},
        )
    database_host.host = _clean_host_text("host", database_host.host)
    database_host.public_host = _clean_host_text(
        "public_host", database_host.public_host, blank=True
    )
    if not 1 <= database_host.port <= 65535:
        raise ValidationFailed.field("port", "invalid", _("A port is 1 to 65535."))
    if not 0 < len(database_host.admin_user or "") <= 100:
        raise ValidationFailed.field(
            "admin_user", "required", _("An admin user of 1 to 100 characters.")
        )
    if not 0 <= database_host.max_databases <= MAX_DATABASES:
        raise ValidationFailed.field(
            "max_databases",
            "invalid",
            _("max_databases is 0 to %(max)s.") % {"max": f"{MAX_DATABASES:,}"},
        )


def _connection_tried(database_host: DatabaseHost) -> str:
    """Sign in as the admin user with what the host row holds now (saved or not); the host's
    version, or 400 ``validation_failed`` on ``host`` (``connection_failed``) with the host's
    own words: only staff read them, and they typed what failed."""
    try:
        with _admin(database_host) as connection:
            return engines.server_version(database_host.engine, connection)
    except (engines.EngineError, ValueError, OSError) as error:
        reason = " ".join(str(error).split())[:300] or type(error).__name__
        raise ValidationFailed.field(
            "host",
            "connection_failed",
            # Translators: reason is the database server's own error message (in English).
            _("Could not sign in to %(host)s:%(port)s as %(user)s: %(reason)s")
            % {
                "host": database_host.host,
                "port": database_host.port,
                "user": database_host.admin_user,
                "reason": reason,
            },
        ) from None


def database_host_create(
    *,
    engine: str,
    name: str,
    host: str,
    port: int,
    admin_user: str,
    admin_password: str,
    public_host: str = "",
    region: Region | None = None,
    nodes: list[Node] | None = None,
    max_databases: int = 1000,
    active: bool = True,
    actor: Actor = SYSTEM,
    verify: bool = False,
) -> DatabaseHost:
    """Register a database host; the admin password is kept encrypted and never shown again.
    With ``verify`` (the staff API), the service first signs in with it (400
    ``connection_failed`` on ``host`` when that fails, and nothing is saved).
    ``database_host.created``, a staff event."""
    if engine not in DatabaseEngine.values:
        raise ValidationFailed.field(
            "engine", "invalid_choice", _("engine is mariadb or postgresql.")
        )
    database_host = DatabaseHost(
        engine=engine,
        name=name,
        host=host,
        port=port,
        public_host=public_host,
        admin_user=admin_user,
        region=region,
        max_databases=max_databases,
        active=active,
    )
    _clean_host_fields(database_host)
    database_host_password_set(database_host, admin_password, save=False)
    if verify:
        _connection_tried(database_host)
    with transaction.atomic():
        database_host.save()
        if nodes:
            database_host.nodes.set(nodes)
        _host_event(database_host, "created", actor)
    return database_host


def database_host_update(
    *, database_host: DatabaseHost, changes: DatabaseHostChanges, actor: Actor
) -> DatabaseHost:
    """Change a host's name, addresses, admin sign-in, region, nodes, room or activity. A new
    address, port, admin user or password is tried on the host first (400
    ``connection_failed`` on ``host``, nothing kept); the rest is kept without asking the host,
    so a host that is down can still be made inactive. ``database_host.updated``."""
    given = changes.given()
    with transaction.atomic():
        database_host = DatabaseHost.objects.select_for_update().get(pk=database_host.pk)
        before = database_host_representation(database_host)
        for field, value in given.items():
            if field == "admin_password":
                database_host_password_set(database_host, value, save=False)
            elif field != "nodes":
                setattr(database_host, field, value)
        _clean_host_fields(database_host)
        if HOST_CONNECTION_FIELDS & set(given):
            _connection_tried(database_host)
        database_host.save()
        if "nodes" in given:
            database_host.nodes.set(given["nodes"])
        previous = changed_attributes(before, database_host_representation(database_host))
        if previous or "admin_password" in given:
            _host_event(database_host, "updated", actor, previous)
    return database_host


def database_host_delete(*, database_host: DatabaseHost, actor: Actor) -> None:
    """Remove a host that holds no database any more: 409 ``conflict`` (``details.databases``)
    while customers' databases live on it. ``database_host.deleted``."""
    with transaction.atomic():
        database_host = DatabaseHost.objects.select_for_update().get(pk=database_host.pk)
        count = ServerDatabase.objects.filter(host=database_host).count()
        if count:
            raise Conflict(
                ngettext(
                    "%(name)s still holds %(count)s database; they go when their servers and "
                    "bots delete them (or staff drop them).",
                    "%(name)s still holds %(count)s databases; they go when their servers and "
                    "bots delete them (or staff drop them).",
                    count,
                )
                % {"name": database_host.name, "count": count},
                details={"databases": count},
            )
        _host_event(database_host, "deleted", actor)
        database_host.delete()


def database_hosts_with_usage() -> QuerySet[DatabaseHost]:
    """Every database host, newest first, with ``used`` (its databases) and its nodes."""
    used = (
        ServerDatabase.objects.filter(host=OuterRef("pk"))
        .values("host")
        .annotate(count=Count("pk"))
        .values("count")
    )
    return (
        DatabaseHost.objects.annotate(used=Coalesce(Subquery(used), Value(0)))
        .prefetch_related("nodes")
        .order_by("-created_at", "-id")
    )


def database_host_password_set(
    database_host: DatabaseHost, password: str, *, save: bool = True
) -> None:
    """Keep a new admin password (encrypted)."""
    database_host.admin_password_encrypted = encrypt_secret(password)
    if save:
        database_host.save(update_fields=["admin_password_encrypted"])


def _admin(database_host: DatabaseHost) -> AbstractContextManager[Any]:
    return engines.admin_connection(
        database_host.engine,
        host=database_host.host,
        port=database_host.port,
        user=database_host.admin_user,
        password=decrypt_secret(database_host.admin_password_encrypted)
        if database_host.admin_password_encrypted
        else "",
        timeout=settings.DATABASE_HOST_TIMEOUT_SECONDS,
    )


def _unavailable(database_host: DatabaseHost, error: Exception) -> DatabaseHostUnavailable:
    # The driver's words stay in the log: they may name the host's internals.
    logger.warning("Database host %s (%s): %s", database_host.name, database_host.pk, error)
    return DatabaseHostUnavailable(
        _(
            "The database host %(name)s did not answer or refused the change; "
            "try again in a few minutes."
        )
        % {"name": database_host.name}
    )


def database_host_check(database_host: DatabaseHost) -> str:
    """Sign in as the admin user and answer the host's version (the admin's "test
    connection"); 503 ``database_host_unavailable`` when that fails."""
    try:
        with _admin(database_host) as connection:
            return engines.server_version(database_host.engine, connection)
    except engines.EngineError as error:
        raise _unavailable(database_host, error) from error


# --- Reading ----------------------------------------------------------------------------------


def database_limit(instance: Instance) -> int:
    """How many databases the instance may have: its plan's, or the setting's default."""
    return (instance.plan or {}).get("database_limit", settings.DATABASE_DEFAULT_LIMIT)


def databases_of(instance: Instance) -> QuerySet[ServerDatabase]:
    """The instance's databases, newest first, with their hosts."""
    return (
        ServerDatabase.objects.filter(**{instance.kind: instance})
        .select_related("host")
        .order_by("-created_at", "-id")
    )


def database_of(instance: Instance, database_id: str) -> ServerDatabase:
    """One of the instance's databases; 404 for any other id."""
    database = databases_of(instance).filter(pk=database_id).first()
    if database is None:
        raise NotFound(_("No such database."))
    return database


# --- Names ------------------------------------------------------------------------------------


def _short_id(instance: Instance) -> str:
    """``s`` or ``b`` and the first 8 characters of the id's token, lowercased."""
    return ("s" if isinstance(instance, Server) else "b") + instance.pk.split("_", 1)[1][:8].lower()


def _username(instance: Instance) -> str:
    """``<short id>_<6 random>``: at most 16 characters (MySQL allows 32, PostgreSQL 63)."""
    alphabet = string.ascii_lowercase + string.digits
    return f"{_short_id(instance)}_{''.join(secrets.choice(alphabet) for _ in range(6))}"


def new_password() -> str:
    """A generated password of 32 URL-safe characters (192 bits)."""
    return secrets.token_urlsafe(PASSWORD_BYTES)


def _clean_name(name: str) -> str:
    name = (name or "").strip()
    if not NAME.fullmatch(name):
        raise ValidationFailed.field(
            "name",
            "invalid",
            _("A name is 1 to 20 lowercase letters, digits and underscores, a letter first."),
        )
    return name


def _clean_remote(remote: str | None, engine: str) -> str:
    remote = (remote or "%").strip()
    if engine == DatabaseEngine.POSTGRESQL:
        if remote != "%":
            raise ValidationFailed.field(
                "remote",
                "unsupported",
                _(
                    "A PostgreSQL host decides itself who may connect (its pg_hba.conf): remote "
                    "is %% there."
                )
                % {},
            )
        return remote
    if remote == "%" or IPV4_WILDCARD.fullmatch(remote):
        if remote != "%" and any(int(part) > 255 for part in remote.split(".")[:-1]):
            raise ValidationFailed.field(
                "remote", "invalid", _("Each part of an IPv4 is 0 to 255.")
            )
        return remote
    try:
        return str(ipaddress.ip_address(remote))
    except ValueError:
        raise ValidationFailed.field(
            "remote",
            "invalid",
            _(
                "remote is %% (anywhere), an IP address, or an IPv4 prefix ending in %% "
                "(203.0.113.%%)."
            )
            % {},
        ) from None


# --- Create, rotate, delete -------------------------------------------------------------------


def _hosts_for(instance: Instance, engine: str) -> QuerySet[DatabaseHost]:
    """Active hosts of the engine serving the instance's region and node, least used first."""
    used = (
        ServerDatabase.objects.filter(host=OuterRef("pk"))
        .values("host")
        .annotate(count=Count("pk"))
        .values("count")
    )
    serving_node = Q(nodes=None) | Q(nodes=instance.node_id) if instance.node_id else Q(nodes=None)
    return (
        DatabaseHost.objects.filter(engine=engine, active=True)
        .filter(Q(region=None) | Q(region=instance.region_id))
        .filter(serving_node)
        .annotate(used=Coalesce(Subquery(used), Value(0)))
        .filter(used__lt=F("max_databases"))
        .distinct()
        .order_by("used", "created_at", "id")
    )


def database_engines_open(instance: Instance) -> list[str]:
    """The engines (MariaDB first) with an active host that serves the instance and has room:
    what a create may ask for now (the dashboard's form offers these)."""
    return [engine for engine in DatabaseEngine.values if _hosts_for(instance, engine).exists()]


def _record(database: ServerDatabase, change: str, actor: Actor, extra: dict | None = None) -> None:
    instance = database.instance
    record_event(
        type=f"database.{change}",
        account=instance.account,
        object_type="database",
        obj=database_representation(database) | (extra or {}),
        actor=actor,
        related_id=instance.pk,
    )


def database_create(
    *,
    instance: Instance,
    name: str,
    actor: Actor,
    remote: str | None = None,
    engine: str = DatabaseEngine.MARIADB,
) -> tuple[ServerDatabase, str]:
    """Create a database and its user on a host; ``(database, password)``, the password's only
    showing. 409 ``database_limit_reached`` at the plan's count, 409 ``no_database_host`` when no
    active host of the engine serves the instance (or all are full), 503
    ``database_host_unavailable`` when the host fails (nothing is left behind on it)."""
    if engine not in DatabaseEngine.values:
        raise ValidationFailed.field(
            "engine", "invalid_choice", _("engine is mariadb or postgresql.")
        )
    name = _clean_name(name)
    remote = _clean_remote(remote, engine)
    password = new_password()
    made: tuple[DatabaseHost, ServerDatabase] | None = None
    try:
        with transaction.atomic():
            instance = instance_locked(instance)
            if instance.status in CLOSED:
                raise InvalidState(
                    (
                        _("A server that is %(status)s gets no new database.")
                        if instance.kind == "server"
                        else _("A bot that is %(status)s gets no new database.")
                    )
                    % {"status": instance.status},
                    details={"status": instance.status, "allowed_actions": []},
                )
            limit = database_limit(instance)
            mine = databases_of(instance)
            if mine.count() >= limit:
                raise DatabaseLimitReached(
                    (
                        ngettext(
                            "This server has %(limit)s database, as many as its plan allows; "
                            "delete one first.",
                            "This server has %(limit)s databases, as many as its plan allows; "
                            "delete one first.",
                            limit,
                        )
                        if instance.kind == "server"
                        else ngettext(
                            "This bot has %(limit)s database, as many as its plan allows; "
                            "delete one first.",
                            "This bot has %(limit)s databases, as many as its plan allows; "
                            "delete one first.",
                            limit,
                        )
                    )
                    % {"limit": limit},
                    details={"limit": limit},
                )
            if mine.filter(name=name).exists():
                raise ValidationFailed.field(
                    "name",
                    "unique",
                    (
                        _("This server already has a database %(name)s.")
                        if instance.kind == "server"
                        else _("This bot already has a database %(name)s.")
                    )
                    % {"name": name},
                )
            chosen = _hosts_for(instance, engine).first()
            if chosen is None:
                raise NoDatabaseHost(
                    (
                        _(
                            "No %(engine)s host can take a database for this server now; "
                            "ask support."
                        )
                        if instance.kind == "server"
                        else _(
                            "No %(engine)s host can take a database for this bot now; ask support."
                        )
                    )
                    % {"engine": DatabaseEngine(engine).label}
                )
            database_host = DatabaseHost.objects.select_for_update().get(pk=chosen.pk)
            try:
                with transaction.atomic():
                    database = ServerDatabase.objects.create(
                        account=instance.account,
                        server=instance if isinstance(instance, Server) else None,
                        bot=instance if isinstance(instance, Bot) else None,
                        host=database_host,
                        name=name,
                        db_name=f"{_short_id(instance)}_{name}",
                        username=_username(instance),
                        remote=remote,
                        created_by_user=actor.user,
                        created_by_key=actor.api_key,
                    )
            except IntegrityError:
                raise Conflict(
                    _("A database of this name was just created; pick another name.")
                ) from None
            _record(database, "created", actor)
            try:
                with _admin(database_host) as connection:
                    engines.create(
                        database_host.engine,
                        connection,
                        database=database.db_name,
                        user=database.username,
                        password=password,
                        remote=remote,
                    )
            except engines.EngineError as error:
                raise _unavailable(database_host, error) from error
            made = (database_host, database)
    except BaseException:
        if made is not None:  # made on the host, but its row was not committed
            _drop_quietly(*made)
        raise
    return database, password


def _drop_quietly(database_host: DatabaseHost, database: ServerDatabase) -> None:
    try:
        with _admin(database_host) as connection:
            engines.drop(
                database_host.engine,
                connection,
                database=database.db_name,
                user=database.username,
                remote=database.remote,
            )
    except engines.EngineError as error:
        logger.error("Left %s on %s: %s", database.db_name, database_host.name, error)


def database_password_rotate(
    *, database: ServerDatabase, actor: Actor
) -> tuple[ServerDatabase, str]:
    """A new generated password for the database's user, answered once; the old one stops
    working at once. 503 ``database_host_unavailable`` (nothing changed) when the host fails."""
    instance = database.instance
    if instance.status in CLOSED:
        raise InvalidState(
            (
                _("The databases of a server that is %(status)s keep their passwords.")
                if instance.kind == "server"
                else _("The databases of a bot that is %(status)s keep their passwords.")
            )
            % {"status": instance.status},
            details={"status": instance.status, "allowed_actions": []},
        )
    password = new_password()
    database_host = database.host
    try:
        with _admin(database_host) as connection:
            engines.set_password(
                database_host.engine,
                connection,
                user=database.username,
                password=password,
                remote=database.remote,
            )
    except engines.EngineError as error:
        raise _unavailable(database_host, error) from error
    with transaction.atomic():
        database.password_rotated_at = timezone.now()
        database.save(update_fields=["password_rotated_at"])
        _record(database, "password_rotated", actor)
    return database, password


def database_delete(*, database: ServerDatabase, actor: Actor) -> None:
    """Drop the database and its user on the host, then the row, with ``database.deleted``.
    503 ``database_host_unavailable`` when the host fails (the row stays, to try again)."""
    database_host = database.host
    try:
        with _admin(database_host) as connection:
            engines.drop(
                database_host.engine,
                connection,
                database=database.db_name,
                user=database.username,
                remote=database.remote,
            )
    except engines.EngineError as error:
        raise _unavailable(database_host, error) from error
    with transaction.atomic():
        current = ServerDatabase.objects.select_for_update().filter(pk=database.pk).first()
        if current is None:
            return
        _record(database, "deleted", actor, {"deleted": True})
        current.delete()


def databases_drop_deleted(*, now: datetime | None = None) -> int:
    """Drop the databases of servers and bots deleted more than ``DATABASE_DROP_GRACE_HOURS``
    ago; how many went. One whose host does not answer stays for the next run. From the
    housekeeping loop."""
    edge = (now or timezone.now()) - timedelta(hours=settings.DATABASE_DROP_GRACE_HOURS)
    due = ServerDatabase.objects.filter(
        Q(server__deleted_at__lt=edge) | Q(bot__deleted_at__lt=edge)
    ).select_related("host", "server", "bot", "account")
    dropped = 0
    for database in due:
        try:
            database_delete(database=database, actor=SYSTEM)
        except DatabaseHostUnavailable:
            continue
        dropped += 1
    return dropped
