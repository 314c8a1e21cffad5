"""Settings → Webhooks: the account's endpoints, their secrets (shown once) and deliveries.

Views parse input, call one service of webhooks/services.py with the signed-in person as the
actor, and render. Endpoints and deliveries are looked up within ``request.account``, so another
account's answer 404. Reading needs ``webhooks:read`` in the role's scopes (else 404, like a
missing right); every POST needs ``webhooks:write``, and a suspended account is read-only. The
pages that are nothing but a form (new, edit) are refused as soon as they are opened.
"""

from functools import cached_property

from django.contrib import messages
from django.db.models import Count
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views import View
from django.views.decorators.cache import never_cache
from django.views.generic import FormView, ListView, TemplateView

from accounts.mixins import AreaPageMixin
from hosting.dashboard.lists import ListControlsMixin
from hosting.dashboard.secrets_once import (
    SHOWN_FOR_SECONDS,
    SecretNoLongerShown,
    secret_hand_over,
    secret_take,
)
from hosting.errors import ApplicationError
from webhooks.filters import WebhookListFilter
from webhooks.forms import WebhookEditForm, WebhookEndpointForm, events_summary
from webhooks.models import DeliveryStatus, WebhookEndpoint
from webhooks.services import (
    delivery_retry,
    endpoint_create,
    endpoint_delete,
    endpoint_rotate_secret,
    endpoint_send_test,
    endpoint_update,
)

NEW_SECRET_SESSION_KEY = "new_webhook_secret"  # noqa: S105 - a session key's name, not a secret
# The status filter of an endpoint's deliveries, in the order its tabs are shown.
DELIVERY_FILTERS = [DeliveryStatus.FAILED, DeliveryStatus.PENDING, DeliveryStatus.SUCCEEDED]


class WebhookPageMixin(AreaPageMixin):
    """A webhooks page: readable with ``webhooks:read``, changed only with ``webhooks:write``."""

    area = "webhooks"

    @property
    def refused_url(self) -> str:
        if "endpoint_id" in self.kwargs:
            return reverse("webhook_detail", args=[self.kwargs["endpoint_id"]])
        return reverse("webhooks")

    def endpoints(self):
        return WebhookEndpoint.objects.filter(account=self.account)


def remember_secret(request, endpoint: WebhookEndpoint, secret: str, *, rotated: bool) -> None:
    """Post/redirect/get: the secret travels once through the session, encrypted, never in a URL."""
    secret_hand_over(
        request,
        NEW_SECRET_SESSION_KEY,
        secret,
        endpoint_id=endpoint.id,
        url=endpoint.url,
        rotated=rotated,
    )


class WebhookObjectMixin(WebhookPageMixin):
    """A page of one endpoint of the current account, found by ``endpoint_id``."""

    @cached_property
    def endpoint(self) -> WebhookEndpoint:
        return get_object_or_404(self.endpoints(), id=self.kwargs["endpoint_id"])

    def get_context_data(self, **kwargs):
        return super().get_context_data(endpoint=self.endpoint, **kwargs)


class WebhookListView(ListControlsMixin, WebhookPageMixin, ListView):
    """The account's endpoints, found by a part of the URL or the description."""

    template_name = "webhooks/list.html"
    context_object_name = "endpoints"
    search_fields = ("url", "description")
    search_label = gettext_lazy("URL or description")
    filterset_class = WebhookListFilter
    sort_fields = {"url": "url", "created_at": "created_at", "last_delivery_at": "last_delivery_at"}
    default_sort = "-created_at"

    def get_base_queryset(self):
        return self.endpoints()

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        for endpoint in context["endpoints"]:
            endpoint.events_summary = events_summary(endpoint.enabled_events)
        return context


class WebhookCreateView(WebhookPageMixin, FormView):
    template_name = "webhooks/create.html"
    form_class = WebhookEndpointForm
    form_page = True

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
        except ApplicationError as error:
            return self.refused(error, form=form)
        remember_secret(self.request, endpoint, secret, rotated=False)
        return redirect("webhook_created")


@method_decorator(never_cache, name="dispatch")
class WebhookSecretView(WebhookPageMixin, TemplateView):
    """Shows a new or rotated secret exactly once: the session entry is gone after this page."""

    template_name = "webhooks/secret.html"

    def get(self, request, *args, **kwargs):
        try:
            shown = secret_take(request, NEW_SECRET_SESSION_KEY)
        except SecretNoLongerShown as late:
            minutes = SHOWN_FOR_SECONDS // 60
            messages.error(
                request,
                ngettext(
                    "The signing secret of %(url)s is no longer shown: it is shown only within "
                    "%(minutes)d minute. Rotate the secret on the endpoint's page to get a new "
                    "one.",
                    "The signing secret of %(url)s is no longer shown: it is shown only within "
                    "%(minutes)d minutes. Rotate the secret on the endpoint's page to get a new "
                    "one.",
                    minutes,
                )
                % {"url": late.context["url"], "minutes": minutes},
            )
            return redirect("webhook_detail", endpoint_id=late.context["endpoint_id"])
        if shown is None:
            return redirect("webhooks")
        return self.render_to_response(self.get_context_data(shown=shown))


class WebhookDetailView(WebhookObjectMixin, ListView):
    """The endpoint's summary and health, then its deliveries, newest first, by status.

    ``?status=failed`` (or pending, succeeded) filters them; a page number out of range or not a
    number shows the last or the first page rather than an error.
    """

    template_name = "webhooks/detail.html"
    context_object_name = "deliveries"
    paginate_by = 25
    http_method_names = ["get", "head", "options"]

    @cached_property
    def status_filter(self) -> str | None:
        status = self.request.GET.get("status")
        return status if status in DeliveryStatus.values else None

    def get_queryset(self):
        deliveries = self.endpoint.deliveries.select_related("event").prefetch_related("attempts")
        if self.status_filter:
            deliveries = deliveries.filter(status=self.status_filter)
        return deliveries

    # Django's get_page: the same page rules as the lists' (a bad page shows the first or the
    # last), without their search box, menus and sort headers, which this page replaces with
    # its status tabs and a fixed newest-first order.
    def paginate_queryset(self, queryset, page_size):
        paginator = self.get_paginator(queryset, page_size)
        page = paginator.get_page(self.request.GET.get(self.page_kwarg))
        return paginator, page, page.object_list, page.has_other_pages()

    def status_tabs(self) -> list[dict]:
        """The filter's tabs (all, failed, pending, succeeded), each with its count: one query."""
        counts = dict(
            self.endpoint.deliveries.order_by().values_list("status").annotate(Count("id"))
        )
        tabs = [{"status": None, "label": _("All"), "count": sum(counts.values())}]
        tabs += [
            {"status": status.value, "label": status.label, "count": counts.get(status, 0)}
            for status in DELIVERY_FILTERS
        ]
        for tab in tabs:
            tab["current"] = tab["status"] == self.status_filter
        return tabs

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        for delivery in context["deliveries"]:
            attempts = list(delivery.attempts.all())  # prefetched: no query
            delivery.last_attempt = attempts[-1] if attempts else None
        until = self.endpoint.previous_secret_expires_at
        context.update(
            rotating_until=until if until and until > timezone.now() else None,
            status_filter=self.status_filter,
            status_tabs=self.status_tabs(),
        )
        return context


class WebhookEditView(WebhookObjectMixin, FormView):
    """URL, description and events of an endpoint, on a page of their own."""

    template_name = "webhooks/edit.html"
    form_page = True

    def get_form(self, form_class=None):
        data = self.request.POST if self.request.method == "POST" else None
        return WebhookEditForm.of(self.endpoint, data)

    def form_valid(self, form):
        try:
            endpoint_update(endpoint=self.endpoint, actor=self.actor(), **form.changes())
        except ApplicationError as error:
            return self.refused(error, form=form)
        messages.success(self.request, _("Saved the webhook endpoint."))
        return redirect("webhook_detail", endpoint_id=self.endpoint.id)


class WebhookEnableView(WebhookObjectMixin, View):
    """The enable / disable button: ``enabled`` is "true" or "false"."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        enabled = request.POST.get("enabled") == "true"
        endpoint = endpoint_update(endpoint=self.endpoint, enabled=enabled, actor=self.actor())
        if endpoint.enabled:
            messages.success(request, _("The endpoint is enabled: new events are sent to it."))
        else:
            messages.success(request, _("The endpoint is disabled: no events are sent to it."))
        return redirect(self.refused_url)


class WebhookSendTestView(WebhookObjectMixin, View):
    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        endpoint_send_test(endpoint=self.endpoint, actor=self.actor())
        messages.success(
            request, _("A webhook.test event is on its way; its delivery is listed below.")
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
        messages.success(request, _("Deleted the webhook endpoint %(url)s.") % {"url": url})
        return redirect("webhooks")


class WebhookDeliveryRetryView(WebhookObjectMixin, View):
    """Send one delivery again now (same event, same ``webhook-id``)."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        delivery = get_object_or_404(self.endpoint.deliveries, id=self.kwargs["delivery_id"])
        try:
            delivery_retry(delivery=delivery)
        except ApplicationError as error:
            return self.refused(error, back_to=self.refused_url)
        messages.success(
            request, _("Delivery %(id)s will be sent again now.") % {"id": delivery.id}
        )
        return redirect(self.refused_url)
