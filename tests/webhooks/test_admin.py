"""Django admin for webhooks: an endpoint is changed and deleted (one at a time or in bulk) only
through the endpoint services, with their events; deliveries are a read-only log; no secret shows.

``admin_client`` and ``admin_user`` are pytest-django's staff superuser and its signed-in client.
"""

import pytest
from django.test import Client
from django.urls import reverse

from accounts.actors import Actor
from events.models import Event
from tests.accounts.test_admin import admin_url
from tests.factories import WebhookEndpointFactory
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import endpoint_send_test

URL = "https://93.184.215.14/hook"


def make_endpoint(owner, account, description: str = "Chat bot") -> WebhookEndpoint:
    return WebhookEndpointFactory(
        account=account,
        url=URL,
        description=description,
        enabled_events=["server.*"],
        created_by=owner,
    )


@pytest.fixture
def endpoint(owner, account) -> WebhookEndpoint:
    return make_endpoint(owner, account)


def test_re_enabling_an_endpoint_goes_through_the_service(admin_client, admin_user, endpoint):
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        enabled=False, disabled_reason="Failing for 3 days.", failure_streak=40
    )

    response = admin_client.post(
        admin_url(WebhookEndpoint, "change", endpoint.pk),
        {"description": "Chat bot", "enabled": "on"},
    )

    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert (endpoint.enabled, endpoint.disabled_reason, endpoint.failure_streak) == (True, "", 0)
    event = Event.objects.get(type="webhook_endpoint.updated", object_id=endpoint.pk)
    assert event.actor_user == admin_user
    assert event.data["previous_attributes"]["enabled"] is False


def test_only_enabled_and_description_can_be_edited(admin_client, endpoint):
    response = admin_client.post(
        admin_url(WebhookEndpoint, "change", endpoint.pk),
        {"description": "Chat bot", "enabled": "on", "url": "https://evil.example/hook"},
    )

    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.url == URL
    assert not Event.objects.filter(type="webhook_endpoint.updated").exists()


def test_deleting_an_endpoint_goes_through_the_service(admin_client, admin_user, endpoint):
    response = admin_client.post(admin_url(WebhookEndpoint, "delete", endpoint.pk), {"post": "yes"})

    assert response.status_code == 302
    assert not WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()
    event = Event.objects.get(type="webhook_endpoint.deleted", object_id=endpoint.pk)
    assert event.actor_user == admin_user


def test_delete_selected_deletes_each_endpoint_through_the_service(
    admin_client, admin_user, owner, account, endpoint
):
    other = make_endpoint(owner, account, description="Alerts")

    response = admin_client.post(
        admin_url(WebhookEndpoint, "changelist"),
        {"action": "delete_selected", "_selected_action": [endpoint.pk, other.pk], "post": "yes"},
    )

    assert response.status_code == 302
    assert not WebhookEndpoint.objects.exists()
    deleted = Event.objects.filter(type="webhook_endpoint.deleted", actor_user=admin_user)
    assert sorted(deleted.values_list("object_id", flat=True)) == sorted([endpoint.pk, other.pk])


def test_deliveries_are_a_read_only_log(admin_client, owner, endpoint):
    delivery = endpoint_send_test(endpoint=endpoint, actor=Actor(user=owner))

    page = admin_client.get(admin_url(WebhookDelivery, "change", delivery.pk))
    post = admin_client.post(
        admin_url(WebhookDelivery, "change", delivery.pk), {"status": "failed"}
    )
    delete = admin_client.post(admin_url(WebhookDelivery, "delete", delivery.pk), {"post": "yes"})
    changelist = admin_client.get(admin_url(WebhookDelivery, "changelist"))

    assert page.status_code == 200
    assert b'name="_save"' not in page.content
    assert (post.status_code, delete.status_code) == (403, 403)
    assert changelist.context["action_form"] is None  # no "delete selected"
    delivery.refresh_from_db()
    assert delivery.status == "pending"


def test_an_endpoints_page_never_shows_its_secret(admin_client, endpoint):
    page = admin_client.get(admin_url(WebhookEndpoint, "change", endpoint.pk)).content.decode()

    assert endpoint.secret_encrypted not in page
    assert "secret_encrypted" not in page


def test_customers_cannot_reach_the_endpoint_pages(owner, endpoint):
    client = Client()
    client.force_login(owner)

    response = client.post(admin_url(WebhookEndpoint, "delete", endpoint.pk), {"post": "yes"})

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))
    assert WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()
