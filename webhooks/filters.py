"""Query filters: the dashboard's webhook endpoints list (hosting/dashboard/lists.py) and
``GET /v1/webhooks/{id}/deliveries``."""

import django_filters
from django.utils.translation import gettext_lazy as _

from hosting.api.filters import ChoiceInFilter
from webhooks.models import DeliveryStatus, WebhookDelivery, WebhookEndpoint


class WebhookListFilter(django_filters.FilterSet):
    """The webhooks page: the endpoints that are enabled, or those that are disabled."""

    status = django_filters.ChoiceFilter(
        choices=[("enabled", _("Enabled")), ("disabled", _("Disabled"))],
        method="filter_status",
        label=_("Status"),  # not a field of the model: django-filter could not name it
        empty_label=_("Any status"),
    )

    class Meta:
        model = WebhookEndpoint
        fields: list[str] = []

    def filter_status(self, queryset, name, value):
        return queryset.filter(enabled=value == "enabled")


class DeliveryFilter(django_filters.FilterSet):
    """``status`` of ``GET /v1/webhooks/{id}/deliveries``."""

    status = ChoiceInFilter(
        choices=DeliveryStatus.choices,
        help_text="Only deliveries in this status, or in any of a comma-separated list.",
    )

    class Meta:
        model = WebhookDelivery
        fields: list[str] = []
