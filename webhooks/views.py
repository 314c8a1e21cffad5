"""Settings → Webhooks: the account's endpoints, their secrets (shown once) and deliveries.

Views parse input, call one service of webhooks/services.py with the signed-in person as the
actor, and render. Endpoints and deliveries are looked up within ``request.account``, so another
account's answer 404. Reading needs ``webhooks:read`` in the role's scopes (else 404, like a
missing right); every POST needs ``webhooks:write``, and a suspended account is read-only.
"""

from functools import cached_property

from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.cache import never_cache
from django.views.generic import FormView, ListView, TemplateView

from accounts.roles import SCOPES, scopes_allowed_for
from accounts.views import AccountChangeMixin
from hosting.errors import Conflict, QuotaExceeded, ValidationFailed
from webhooks.forms import WebhookEditForm, WebhookEndpointForm, events_summary
from webhooks.models import WebhookEndpoint
from webhooks.services import (
    delivery_retry,
    endpoint_create,
    endpoint_delete,
    endpoint_rotate_secret,
    endpoint_send_test,
    endpoint_update,
)

NEW_SECRET_SESSION_KEY = "new_webhook_secret"  # noqa: S105 - a session key's name, not a secret


class WebhookPageMixin(AccountChangeMixin):
    """A webhooks page: readable with ``webhooks:read``, changed only with ``webhooks:write``."""

    def role_may(self, verb: str) -> bool:
        return f"webhooks:{verb}" in scopes_allowed_for(self.role, is_staff=False)

    def refuse(self, request):
        if not self.role_may("read"):
            raise Http404("No such page.")
        if request.method == "POST" and not self.role_may("write"):
            scope = SCOPES["webhooks:write"]
            role = request.membership.get_role_display()
            messages.error(request, f"As {role}, you may not {scope[0].lower()}{scope[1:]}.")
            return redirect(self.refused_url)
        return super().refuse(request)

    @property
    def refused_url(self) -> str:
        if "endpoint_id" in self.kwargs:
            return reverse("webhook_detail", args=[self.kwargs["endpoint_id"]])
        return reverse("webhooks")

    def endpoints(self):
        return WebhookEndpoint.objects.filter(account=self.account)

    def get_context_data(self, **kwargs):
        can_write = not self.account.is_suspended and self.role_may("write")
        return super().get_context_data(can_write=can_write, **kwargs)


def remember_secret(request, endpoint: WebhookEndpoint, secret: str, *, rotated: bool) -> None:
    """Post/redirect/get: the secret travels once through the session, never in a URL."""
    request.session[NEW_SECRET_SESSION_KEY] = {
        "endpoint_id": endpoint.id,
        "url": endpoint.url,
        "secret": secret,
        "rotated": rotated,
    }


class WebhookObjectMixin(WebhookPageMixin):
    """A page of one endpoint of the current account, found by ``endpoint_id``."""

    @cached_property
    def endpoint(self) -> WebhookEndpoint:
        return get_object_or_404(self.endpoints(), id=self.kwargs["endpoint_id"])

    def get_context_data(self, **kwargs):
        return super().get_context_data(endpoint=self.endpoint, **kwargs)


class WebhookListView(WebhookPageMixin, ListView):
    template_name = "webhooks/list.html"
    context_object_name = "endpoints"
    paginate_by = 25

    def get_queryset(self):
        return self.endpoints()

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        for endpoint in context["endpoints"]:
            endpoint.events_summary = events_summary(endpoint.enabled_events)
        return context


class WebhookCreateView(WebhookPageMixin, FormView):
    template_name = "webhooks/create.html"
    form_class = WebhookEndpointForm

    def form_valid(self, form):
        data = form.cleaned_data
        try:
            endpoint, secret = endpoint_create(
                account=self.account,
                url=data["url"],
                description=data["description"],
                enabled_events=data["enabled_events"],
                enabled=data["enabled"],
                actor=self.actor(),
            )
        except ValidationFailed as error:
            form.add_service_error(error)
            return self.form_invalid(form)
        except QuotaExceeded as error:
            messages.error(self.request, error.message)
            return self.form_invalid(form)
        remember_secret(self.request, endpoint, secret, rotated=False)
        return redirect("webhook_created")


@method_decorator(never_cache, name="dispatch")
class WebhookSecretView(WebhookPageMixin, TemplateView):
    """Shows a new or rotated secret exactly once: the session entry is gone after this page."""

    template_name = "webhooks/secret.html"

    def get(self, request, *args, **kwargs):
        shown = request.session.pop(NEW_SECRET_SESSION_KEY, None)
        if shown is None:
            return redirect("webhooks")
        return self.render_to_response(self.get_context_data(shown=shown))


class WebhookDetailView(WebhookObjectMixin, ListView):
    """Settings, health, the edit form (it POSTs here) and the deliveries, newest first."""

    template_name = "webhooks/detail.html"
    context_object_name = "deliveries"
    paginate_by = 25

    def get_queryset(self):
        return self.endpoint.deliveries.select_related("event").prefetch_related("attempts")

    def get_context_data(self, **kwargs):
        kwargs.setdefault("form", WebhookEditForm.of(self.endpoint))
        until = self.endpoint.previous_secret_expires_at
        return super().get_context_data(
            rotating_until=until if until and until > timezone.now() else None, **kwargs
        )

    def post(self, request, *args, **kwargs):
        form = WebhookEditForm.of(self.endpoint, request.POST)
        if form.is_valid():
            try:
                endpoint_update(endpoint=self.endpoint, actor=self.actor(), **form.changes())
            except ValidationFailed as error:
                form.add_service_error(error)
            else:
                messages.success(request, "Saved the webhook endpoint.")
                return redirect(self.refused_url)
        self.object_list = self.get_queryset()
        return self.render_to_response(self.get_context_data(form=form))


class WebhookEnableView(WebhookObjectMixin, View):
    """The enable / disable button: ``enabled`` is "true" or "false"."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        enabled = request.POST.get("enabled") == "true"
        endpoint = endpoint_update(endpoint=self.endpoint, enabled=enabled, actor=self.actor())
        if endpoint.enabled:
            messages.success(request, "The endpoint is enabled: new events are sent to it.")
        else:
            messages.success(request, "The endpoint is disabled: no events are sent to it.")
        return redirect(self.refused_url)


class WebhookSendTestView(WebhookObjectMixin, View):
    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        endpoint_send_test(endpoint=self.endpoint, actor=self.actor())
        messages.success(
            request, "A webhook.test event is on its way; its delivery is listed below."
        )
        return redirect(self.refused_url)


class WebhookRotateSecretView(WebhookObjectMixin, TemplateView):
    """Confirm, then rotate: the new secret is shown once; the old one signs for 24 more hours."""

    template_name = "webhooks/rotate.html"

    def post(self, request, *args, **kwargs):
        endpoint, secret = endpoint_rotate_secret(endpoint=self.endpoint, actor=self.actor())
        remember_secret(request, endpoint, secret, rotated=True)
        return redirect("webhook_created")


class WebhookDeleteView(WebhookObjectMixin, TemplateView):
    template_name = "webhooks/delete.html"

    def post(self, request, *args, **kwargs):
        url = self.endpoint.url
        endpoint_delete(endpoint=self.endpoint, actor=self.actor())
        messages.success(request, f"Deleted the webhook endpoint {url}.")
        return redirect("webhooks")


class WebhookDeliveryRetryView(WebhookObjectMixin, View):
    """Send one delivery again now (same event, same ``webhook-id``)."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        delivery = get_object_or_404(self.endpoint.deliveries, id=self.kwargs["delivery_id"])
        try:
            delivery_retry(delivery=delivery)
        except Conflict as error:
            messages.error(request, error.message)
        else:
            messages.success(request, f"Delivery {delivery.id} will be sent again now.")
        return redirect(self.refused_url)
