"""Every create answers 201 with ``Location``: the address the new resource is read at."""

import pytest
from django.test import override_settings

from tests.servers.helpers import MINECRAFT


@pytest.mark.parametrize(
    ("path", "body", "key"),
    [
        ("/v1/servers", MINECRAFT, "server"),
        ("/v1/api-keys", {"name": "CI", "scopes": ["servers:read"]}, "api_key"),
        ("/v1/account/invitations", {"email": "sam@example.com", "role": "viewer"}, "invitation"),
        ("/v1/account/members", {"email": "kim@example.com", "role": "viewer"}, "invitation"),
        ("/v1/webhooks", {"url": "http://127.0.0.1:9/x", "enabled_events": ["*"]}, "webhook"),
    ],
)
@override_settings(WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE_TARGETS=True)
def test_a_create_says_where_the_new_resource_lives(owner_api, path, body, key):
    response = owner_api.post(path, body, format="json")
    assert response.status_code == 201, response.content
    created = response.json()["data"][key]
    location = response["Location"]
    assert location.startswith("http://testserver/v1/") and location.endswith(created["id"])
    again = owner_api.get(location)
    assert again.status_code == 200, again.content
    assert again.json()["data"][key]["id"] == created["id"]


def test_a_new_customer_and_a_rotated_key_are_located_too(
    staff, staff_account, make_token, client_for
):
    staff_api = client_for(make_token(staff, staff_account, ["admin:write", "api_keys:write"]))
    customer = staff_api.post(
        "/v1/admin/customers", {"name": "New Co", "owner_email": "new@example.com"}, format="json"
    )
    assert customer.status_code == 201, customer.content
    assert customer["Location"].endswith(
        f"/v1/admin/customers/{customer.json()['data']['customer']['id']}"
    )
    # Last: rotating its own key without grace retires the calling key at once.
    key_id = staff_api.get("/v1/api-keys").json()["data"]["api_keys"][0]["id"]
    rotated = staff_api.post(f"/v1/api-keys/{key_id}/rotate", {}, format="json")
    assert rotated.status_code == 201, rotated.content
    assert rotated["Location"].endswith(f"/v1/api-keys/{rotated.json()['data']['api_key']['id']}")
