"""Dashboard pages of Settings → Webhooks."""

from django.urls import path

from webhooks import views

urlpatterns = [
    path("settings/webhooks", views.WebhookListView.as_view(), name="webhooks"),
    path("settings/webhooks/new", views.WebhookCreateView.as_view(), name="webhook_create"),
    path("settings/webhooks/created", views.WebhookSecretView.as_view(), name="webhook_created"),
    path(
        "settings/webhooks/<id:endpoint_id>",
        views.WebhookDetailView.as_view(),
        name="webhook_detail",
    ),
    path(
        "settings/webhooks/<id:endpoint_id>/edit",
        views.WebhookEditView.as_view(),
        name="webhook_edit",
    ),
    path(
        "settings/webhooks/<id:endpoint_id>/enable",
        views.WebhookEnableView.as_view(),
        name="webhook_enable",
    ),
    path(
        "settings/webhooks/<id:endpoint_id>/test",
        views.WebhookSendTestView.as_view(),
        name="webhook_send_test",
    ),
    path(
        "settings/webhooks/<id:endpoint_id>/rotate",
        views.WebhookRotateSecretView.as_view(),
        name="webhook_rotate",
    ),
    path(
        "settings/webhooks/<id:endpoint_id>/delete",
        views.WebhookDeleteView.as_view(),
        name="webhook_delete",
    ),
    path(
        "settings/webhooks/<id:endpoint_id>/deliveries/<id:delivery_id>/retry",
        views.WebhookDeliveryRetryView.as_view(),
        name="webhook_delivery_retry",
    ),
]
