"""What the control plane makes of the node's answers and reports about files: each agent error
becomes the contract's, an upload the agent reports is recorded as the uploader's, and the
node unreachable is a 503. (The calls themselves, against a real agent, are in
tests/agent/test_files_control_plane.py.)"""

import socket

import pytest

from accounts.roles import Role
from events.models import Event
from hosting.errors import ServiceUnavailable, ValidationFailed
from servers.models import Node
from servers.services.files import FileCall, agent_error, file_call, pull_url_check
from tests.factories import MembershipFactory, UserFactory
from tests.servers.test_nodes import NOW, create_server, new_node

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "status,code,expected_status,expected_code",
    [
        (400, "outside_server", 400, "validation_failed"),
        (400, "validation_failed", 400, "validation_failed"),
        (403, "not_permitted", 403, "permission_denied"),
        (404, "not_found", 404, "not_found"),
        (404, "unknown_server", 409, "files_unavailable"),
        (409, "conflict", 409, "conflict"),
        (412, "version_mismatch", 412, "version_mismatch"),
        (413, "too_large", 413, "payload_too_large"),
        (507, "disk_quota_exceeded", 422, "quota_exceeded"),
        (500, "agent_error", 503, "service_unavailable"),
        (401, "invalid_token", 503, "service_unavailable"),
    ],
)
def test_each_agent_error_becomes_the_contracts(
    account, status, code, expected_status, expected_code
):
    new_node()
    server = create_server(account)
    answer = {"error": {"code": code, "message": "/world is the agent's sentence."}}
    error = agent_error(server, FileCall("POST", "rename", field="to"), status, answer)
    assert (error.status, error.code) == (expected_status, expected_code)
    if expected_code == "validation_failed":
        field_code = "outside_server" if code == "outside_server" else "invalid"
        assert error.details["fields"] == [
            {"name": "to", "code": field_code, "message": "/world is the agent's sentence."}
        ]
    if expected_code == "quota_exceeded":
        assert error.details == {"limit": 10240, "unit": "MB"}
    if expected_status == 503:
        assert "/world" not in error.message  # the node's own failure is not the customer's


def test_an_unreachable_node_is_503(account):
    new_node()  # its agent address, port 9 on loopback, answers nothing
    server = create_server(account)
    with pytest.raises(ServiceUnavailable, match="cannot be reached"):
        file_call(server, FileCall("GET", "list", query={"path": "/"}))


def upload(client_for, token, server, user_id, **overrides):
    event = {
        "instance_id": server.id,
        "type": "files_uploaded",
        "at": NOW,
        "path": "/world.zip",
        "size": 123456,
        "user": user_id,
    } | overrides
    return client_for(token).post("/v1/agent/events", {"events": [event]}, format="json")


def test_an_upload_the_agent_reports_is_the_uploaders_activity(
    account, owner, owner_api, client_for
):
    _, token = new_node()
    server = create_server(account)
    answer = upload(client_for, token, server, owner.pk)
    assert answer.json()["data"] == {"accepted": 1, "rejected": 0}
    event = Event.objects.get(type="server.files.uploaded")
    assert event.actor_user_id == owner.pk and event.related_id == server.id
    assert event.data["object"] == {
        "object": "file_change",
        "server_id": server.id,
        "change": "uploaded",
        "paths": ["/world.zip"],
        "size": 123456,
    }
    activity = owner_api.get(f"/v1/servers/{server.id}/activity").json()["data"]["events"]
    assert activity[0]["type"] == "server.files.uploaded"


def test_an_upload_by_someone_no_longer_a_member_is_the_systems(account, client_for):
    _, token = new_node()
    server = create_server(account)
    stranger = UserFactory()
    upload(client_for, token, server, str(stranger.pk))
    assert Event.objects.get(type="server.files.uploaded").actor_user_id is None
    member = MembershipFactory(account=account, role=Role.DEVELOPER).user
    upload(client_for, token, server, str(member.pk))
    assert Event.objects.filter(type="server.files.uploaded", actor_user=member).exists()


@pytest.mark.parametrize("missing", ["path", "size", "user"])
def test_an_upload_report_without_its_details_is_counted_as_rejected(
    account, owner, client_for, missing
):
    """Not a reason to refuse the batch: the agent would drop the other events with it."""
    _, token = new_node()
    server = create_server(account)
    event = {
        "instance_id": server.id,
        "type": "files_uploaded",
        "at": NOW,
        "path": "/world.zip",
        "size": 1,
        "user": owner.pk,
    }
    del event[missing]
    crash = {"instance_id": server.id, "type": "running", "at": NOW}
    answer = client_for(token).post("/v1/agent/events", {"events": [event, crash]}, format="json")
    assert answer.json()["data"] == {"accepted": 1, "rejected": 1}
    assert not Event.objects.filter(type="server.files.uploaded").exists()


@pytest.mark.parametrize("overrides", [{"size": "12"}, {"size": -1}, {"user": 7}])
def test_an_upload_report_of_the_wrong_types_is_refused(account, owner, client_for, overrides):
    _, token = new_node()
    server = create_server(account)
    answer = upload(client_for, token, server, owner.pk, **overrides)
    assert answer.status_code == 400, answer.content
    assert not Event.objects.filter(type="server.files.uploaded").exists()


@pytest.mark.parametrize(
    "url,code",
    [
        ("ftp://example.com/a.jar", "invalid"),
        ("https://user:secret@example.com/a.jar", "invalid"),
        ("https://127.0.0.1/a.jar", "unsafe_address"),
        ("http://localhost:8000/a.jar", "unsafe_address"),
        ("http://10.1.2.3/a.jar", "unsafe_address"),
        ("http://169.254.169.254/latest/meta-data/", "unsafe_address"),
        ("http://[::1]/a.jar", "unsafe_address"),
        ("http://[::ffff:127.0.0.1]/a.jar", "unsafe_address"),
        ("http://0x7f.1/a.jar", "unsafe_address"),
        ("https://example.com:99999/a.jar", "invalid"),
    ],
)
def test_a_pull_from_an_unsafe_address_is_refused_here(settings, url, code):
    settings.FILES_PULL_ALLOW_PRIVATE = False
    with pytest.raises(ValidationFailed) as refused:
        pull_url_check(url)
    assert refused.value.details["fields"][0]["name"] == "url"
    assert refused.value.details["fields"][0]["code"] == code


def test_a_pull_host_outside_the_allow_list_is_refused(settings):
    settings.FILES_PULL_ALLOWED_HOSTS = ["github.com", "modrinth.com"]
    settings.FILES_PULL_ALLOW_PRIVATE = True
    with pytest.raises(ValidationFailed) as refused:
        pull_url_check("http://localhost/a.jar")
    assert refused.value.details["fields"][0]["code"] == "host_not_allowed"
    # A name covers its subdomains (checked before resolving, so no lookup is needed to refuse).
    with pytest.raises(ValidationFailed) as refused:
        pull_url_check("https://evilgithub.com/a.jar")
    assert refused.value.details["fields"][0]["code"] == "host_not_allowed"
    settings.FILES_PULL_ALLOWED_HOSTS = ["localhost"]
    assert pull_url_check("http://localhost/a.jar") == "http://localhost/a.jar"


def test_a_long_call_past_its_wait_says_the_node_is_still_at_it(account, settings):
    """The node takes the connection and does not answer within the call's own wait."""
    settings.AGENT_REQUEST_TIMEOUT_SECONDS = 1
    silent = socket.create_server(("127.0.0.1", 0))  # listens, never answers
    try:
        node, _ = new_node()
        Node.objects.filter(pk=node.pk).update(
            agent_url=f"http://127.0.0.1:{silent.getsockname()[1]}"
        )
        server = create_server(account)
        server.refresh_from_db()
        call = FileCall("POST", "compress", body={"paths": ["/world"]}, timeout=0.5)
        with pytest.raises(ServiceUnavailable, match=r"still working on it after 0\.5 seconds"):
            file_call(server, call)
        with pytest.raises(ServiceUnavailable, match="did not answer in time"):
            file_call(server, FileCall("GET", "list", query={"path": "/"}))
    finally:
        silent.close()
