"""The Databases tab of a server or bot: its databases with where and as whom to connect, a
form to create one within the plan's limit, "rotate password" and delete after a confirmation
(databases/services.py does the work, on the database host).

A database's password is shown once: the create or rotation hands it over through the session
(encrypted, ``hosting.dashboard.secrets_once``) to the list page, which shows it and forgets
it; a reload no longer has it. Reading needs the ``databases.read`` permission on the instance
(role or per-server grant: ``servers.services.permissions``), changing ``databases.write`` and
an account that is not suspended. Every change is a plain form POST that comes back with a
message; a host that fails is said there, never a 500.
"""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views import View
from django.views.decorators.cache import never_cache
from django.views.generic import TemplateView

from accounts.actors import Actor
from databases.models import DatabaseEngine, ServerDatabase
from databases.services import (
    database_create,
    database_delete,
    database_engines_open,
    database_limit,
    database_of,
    database_password_rotate,
    databases_of,
)
from hosting.dashboard.secrets_once import (
    SHOWN_FOR_SECONDS,
    SecretNoLongerShown,
    secret_hand_over,
    secret_take,
)
from hosting.errors import ApplicationError
from servers.views import BotPages, InstanceObjectMixin, ServerPages


def _password_session_key(instance_id: str) -> str:
    return f"database_password:{instance_id}"


class InstanceDatabasesMixin(InstanceObjectMixin):
    """A databases page: ``databases.read`` to see it, ``databases.write`` to POST."""

    def may_databases(self, verb: str) -> bool:
        writable = verb == "read" or not self.account.is_suspended
        return writable and f"databases.{verb}" in self.permissions

    def refuse(self, request):
        verb = "write" if request.method == "POST" else "read"
        if not self.may_databases(verb):
            refusals = {
                ("read", "server"): _("As %(role)s, you may not see this server's databases."),
                ("read", "bot"): _("As %(role)s, you may not see this bot's databases."),
                ("write", "server"): _("As %(role)s, you may not change this server's databases."),
                ("write", "bot"): _("As %(role)s, you may not change this bot's databases."),
            }
            role = request.membership.get_role_display()
            messages.error(request, refusals[verb, self.kind] % {"role": role})
            return redirect(self.url("detail") if verb == "read" else self.url("databases"))
        return super().refuse(request)


@method_decorator(never_cache, name="dispatch")
class InstanceDatabasesView(InstanceDatabasesMixin, TemplateView):
    """The databases, newest first, the create form, and a password handed over just now."""

    template_name = "databases/instance_databases.html"

    def shown_password(self) -> dict | None:
        try:
            return secret_take(self.request, _password_session_key(self.instance.pk))
        except SecretNoLongerShown as late:
            messages.error(
                self.request,
                _(
                    "The password of %(database)s is no longer shown: it is shown only within "
                    "%(minutes)s minutes. Rotate it to get a new one."
                )
                % {"database": late.context["database"], "minutes": SHOWN_FOR_SECONDS // 60},
            )
            return None

    def get_context_data(self, **kwargs):
        databases = list(databases_of(self.instance))
        limit = database_limit(self.instance)
        can_write = self.may_databases("write")
        engines = database_engines_open(self.instance) if can_write else []
        return super().get_context_data(
            databases=databases,
            limit=limit,
            limit_reached=len(databases) >= limit,
            engines=[(engine, DatabaseEngine(engine).label) for engine in engines],
            can_write_databases=can_write,
            shown=self.shown_password(),
            **kwargs,
        )


class InstanceDatabasesDoView(InstanceDatabasesMixin, View):
    """``POST op=create name=… remote=… engine=…``, or ``op=rotate|delete database_id=…``: one
    change, back to the list (with the password, once, after a create or a rotation)."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        self.instance  # noqa: B018 - another account's, or none: 404 before reading the form
        form = request.POST
        op = form.get("op", "")
        actor = Actor.from_request(request)
        password = None
        try:
            if op == "create":
                database, password = database_create(
                    instance=self.instance,
                    name=form.get("name", ""),
                    remote=form.get("remote", ""),
                    engine=form.get("engine", "") or DatabaseEngine.MARIADB,
                    actor=actor,
                )
                done = _("The database %(name)s is created.") % {"name": database.db_name}
            elif op == "rotate":
                database, password = database_password_rotate(
                    database=self.database(form), actor=actor
                )
                done = _("%(name)s has a new password; the old one no longer works.") % {
                    "name": database.db_name
                }
            elif op == "delete":
                database = self.database(form)
                database_delete(database=database, actor=actor)
                done = _("The database %(name)s and its user are deleted.") % {
                    "name": database.db_name
                }
            else:
                raise Http404("No such operation.")
        except ApplicationError as error:
            messages.error(request, error.message)
        else:
            messages.success(request, done)
            if password is not None:
                secret_hand_over(
                    request,
                    _password_session_key(self.instance.pk),
                    password,
                    database=database.db_name,
                    database_id=database.pk,
                    username=database.username,
                )
        return redirect(self.url("databases"))

    def database(self, form) -> ServerDatabase:
        return database_of(self.instance, form.get("database_id", ""))


class ServerDatabasesView(ServerPages, InstanceDatabasesView):
    pass


class ServerDatabasesDoView(ServerPages, InstanceDatabasesDoView):
    pass


class BotDatabasesView(BotPages, InstanceDatabasesView):
    pass


class BotDatabasesDoView(BotPages, InstanceDatabasesDoView):
    pass
