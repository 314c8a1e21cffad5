"""The pieces every app's staff pages build on when their changes go through services (billing's
catalogue and documents, support's departments and macros): a model form whose save is a
service call, admin pages whose actions run services and that delete nothing, and links to
objects' admin pages.

A change form runs its service when the form is cleaned (``ServiceForm``), inside the admin's
transaction, so a refusal shows on its field like any other form error; action refusals become
error messages.
"""

from collections.abc import Callable, Iterable
from functools import partial

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.db.models import Model
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from accounts.actors import Actor
from hosting.errors import ApplicationError


def add_refusal(form: forms.Form, refusal: ApplicationError, aliases: dict[str, str]) -> None:
    """A service's refusal on the form: each field it names (``resources.memory_mb`` is the
    form's ``memory_mb``; ``aliases`` rename others), else on the form as a whole."""
    problems = (refusal.details or {}).get("fields") or [{"name": "", "message": refusal.message}]
    for problem in problems:
        name = aliases.get(problem["name"], problem["name"]).rsplit(".", 1)[-1]
        form.add_error(name if name in form.fields else None, problem["message"])


def link(obj: Model | None) -> str:
    """A link to the object's admin page ("-" for none)."""
    if obj is None:
        return "-"
    opts = obj._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[quote(obj.pk)])
    return format_html('<a href="{}">{}</a>', url, obj)


def links(objects: Iterable[Model]) -> str:
    """Links to each object's admin page, one a line ("-" for none)."""
    shown = format_html_join(mark_safe("<br>"), "{}", ((link(obj),) for obj in objects))
    return shown or "-"


class ServiceForm(forms.ModelForm):
    """A model form whose save is a service call: ``perform(form)`` (set by ``ServiceAdmin``)
    runs once the fields are clean and keeps what it returns in ``saved``; its refusal becomes
    the form's errors."""

    perform: Callable[["ServiceForm"], Model]
    # The service's name of a field, where it differs from the form's (``to`` for ``now``).
    field_aliases: dict[str, str] = {}

    def _post_clean(self) -> None:
        super()._post_clean()
        if self._errors:
            return
        try:
            self.saved = self.perform(self)
        except ApplicationError as refusal:
            add_refusal(self, refusal, self.field_aliases)

    def validate_unique(self) -> None:
        """The services check uniqueness (a promotion code in any case, one clock per
        account), with their own messages."""

    def validate_constraints(self) -> None:
        """The services check what the constraints hold (one active tax rate per place, a
        coupon's one discount), naming the field and the reason."""


class ServiceActionsAdmin(admin.ModelAdmin):
    """Pages of objects that change only through services: actions run them (``run``), an
    object's page is view-only unless ``editable_after_add``, and nothing is deleted (archived
    or voided instead, so what invoices point at stays)."""

    editable_after_add = False

    def has_change_permission(self, request, obj=None) -> bool:
        # Without an object: may staff act on these at all (the changelist's actions)?
        if obj is not None and not self.editable_after_add:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def run(
        self,
        request: HttpRequest,
        objects: Iterable[Model],
        service: Callable[..., Model],
        argument: str,
        verb: str,
    ) -> None:
        """``service(<argument>=obj, actor=…)`` on each object; report the ones done and each
        refusal with its reason."""
        actor = Actor.from_request(request)
        done = 0
        for obj in objects:
            try:
                service(**{argument: obj}, actor=actor)
            except ApplicationError as refusal:
                self.message_user(request, f"{obj}: {refusal.message}", messages.ERROR)
            else:
                self.log_change(request, obj, verb)  # its History, as the change form's
                done += 1
        if done:
            meta = self.model._meta
            noun = meta.verbose_name if done == 1 else meta.verbose_name_plural
            self.message_user(request, f"{verb} {done} {noun}.", messages.SUCCESS)


class ServiceAdmin(ServiceActionsAdmin):
    """Adds (and, when ``editable_after_add``, changes) through ``save_through_service``, called
    by the ``ServiceForm`` once its fields are clean."""

    form = ServiceForm

    def save_through_service(self, form: ServiceForm, *, actor: Actor, change: bool) -> Model:
        raise NotImplementedError

    def get_form(self, request, obj=None, change=False, **kwargs):
        form_class = super().get_form(request, obj, change=change, **kwargs)
        perform = partial(
            self.save_through_service, actor=Actor.from_request(request), change=change
        )
        return type(form_class.__name__, (form_class,), {"perform": staticmethod(perform)})

    def get_fields(self, request, obj=None):
        # The add page shows only what is asked: an id or a date is the service's to set.
        fields = super().get_fields(request, obj)
        if obj is None:
            readonly = self.get_readonly_fields(request, obj)
            return [name for name in fields if name not in readonly]
        return fields

    def save_model(self, request, obj, form, change) -> None:
        # The service saved it when the form was cleaned; the admin logs and links to ``obj``.
        saved = form.saved
        for field in obj._meta.concrete_fields:
            setattr(obj, field.attname, getattr(saved, field.attname))
        obj._state.adding, obj._state.db = False, saved._state.db

    def save_related(self, request, form, formsets, change) -> None:
        """The service set the many-to-many fields too."""


class ReadOnlyAdmin(admin.ModelAdmin):
    """A record that changes only through its services: view-only here."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
