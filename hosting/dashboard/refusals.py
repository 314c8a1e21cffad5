"""The one way the dashboard shows a service's refusal (an ``ApplicationError``).

Views call a service inside ``try`` and hand whatever it raises to ``refused``: a missing object
is the 404 page; on a page with a form, invalid fields go next to the form's fields and any other
refusal (a conflict, a quota, a missing right) above the form, with what was typed kept; a button
without a form (start, revoke, retry) sends the person back with the refusal as an error message.
So a rule's wording exists once, in the service, and every page says it the same way.
"""

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect

from hosting.errors import ApplicationError, NotFound


class ServiceErrorFormMixin:
    """A form that shows a service's field errors; ``service_field_names`` maps their names.

    A service refuses with ``details.fields`` naming the inputs (``ValidationFailed.field``);
    ``allowed_ips.2`` names the third line of the ``allowed_ips`` field. An error naming no
    field of the form is shown above it. A form whose inputs are named otherwise overrides
    ``field_for``.
    """

    service_field_names: dict[str, str] = {}

    def add_service_error(self, error: ApplicationError) -> None:
        if isinstance(error, NotFound):
            raise Http404(error.message) from None  # the object went away meanwhile
        fields = (error.details or {}).get("fields") or []
        for field in fields:
            self.add_error(self.field_for(field["name"]), field["message"])
        if not fields:
            self.add_error(None, error.message)

    def field_for(self, service_name: str) -> str | None:
        """The form field a service's field name points at (None: above the form)."""
        name = service_name.split(".", 1)[0]
        name = self.service_field_names.get(name, name)
        return name if name in self.fields else None


class ServiceRefusalMixin:
    """For dashboard views that call services: ``return self.refused(error, ...)``."""

    def refused(
        self, error: ApplicationError, *, form=None, back_to: str | None = None, **url_kwargs
    ) -> HttpResponse:
        """What the person sees when a service refuses: see the module's docstring.

        With a ``form`` the form is shown again; without one, the person is sent ``back_to`` (a
        URL name with its ``url_kwargs``, or a path).
        """
        if form is not None:
            form.add_service_error(error)
            return self.form_invalid(form)
        if isinstance(error, NotFound):
            raise Http404(error.message) from None
        messages.error(self.request, error.message)
        if back_to is None:
            raise ValueError("refused() needs a form to show again or a page to go back to")
        return redirect(back_to, **url_kwargs)
