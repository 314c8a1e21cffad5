"""Dashboard pages of Settings → Webhooks."""

from django.urls import path

from webhooks import views

urlpatterns = [
    path("settings/webhooks", views.WebhookListView.as_view(), name="webhooks"),
    path("settings/webhooks/new", views.WebhookCreateView.as_view(), name="webhook_create"),
    path("settings/webhooks/created", views.WebhookSecretView.as_view(), name="webhook_created"),
    path(
        "settings/webhooks/<str:endpoint_id>",
        views.WebhookDetailView.as_view(),
        name="webhook_detail",
    ),
    path(
        "settings/webhooks/<str:endpoint_id>/enable",
        views.WebhookEnableView.as_view(),
        name="webhook_enable",
    ),
    path(
        "settings/webhooks/<str:endpoint_id>/test",
        views.WebhookSendTestView.as_view(),
        name="webhook_send_test",
    ),
    path(
        "settings/webhooks/<str:endpoint_id>/rotate",
        views.WebhookRotateSecretView.as_view(),
        name="webhook_rotate",
    ),
    path(
        "settings/webhooks/<str:endpoint_id>/delete",
        views.WebhookDeleteView.as_view(),
        name="webhook_delete",
    ),
    path(
        "settings/webhooks/<str:endpoint_id>/deliveries/<str:delivery_id>/retry",
        views.WebhookDeliveryRetryView.as_view(),
        name="webhook_delivery_retry",
    ),
]
