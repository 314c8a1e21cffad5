import pytest

from events.models import Event
from servers.models import Action, Server
from tests.servers.helpers import MINECRAFT, run_worker


@pytest.fixture
def created(owner_api):
    response = owner_api.post("/v1/servers", MINECRAFT, format="json")
    assert response.status_code == 201, response.content
    return response.json()["data"]["server"]


def status_of(api, server_id: str) -> str:
    return api.get(f"/v1/servers/{server_id}").json()["data"]["server"]["status"]


def test_a_new_server_is_provisioned_installed_then_started_and_stopped(owner_api, created):
    assert created["status"] == "provisioning"
    assert created["variables"] == {
        "EULA": True,
        "VERSION": "latest",
        "MAX_PLAYERS": 20,
        "DIFFICULTY": "normal",
    }
    run_worker()
    detail = owner_api.get(f"/v1/servers/{created['id']}").json()["data"]["server"]
    assert detail["status"] == "stopped"
    assert detail["address"] == "203.0.113.10:25565"

    response = owner_api.post(
        f"/v1/servers/{created['id']}/actions", {"type": "start"}, format="json"
    )
    assert response.status_code == 202
    action = response.json()["data"]["action"]
    assert response["Location"].endswith(f"/v1/actions/{action['id']}")
    assert (action["type"], action["status"]) == ("start", "pending")
    assert status_of(owner_api, created["id"]) == "starting"
    run_worker()
    assert status_of(owner_api, created["id"]) == "running"
    done = owner_api.get(f"/v1/actions/{action['id']}").json()["data"]["action"]
    assert done["status"] == "succeeded"
    assert done["completed_at"] is not None

    changes = [
        (e.data["previous_attributes"]["status"], e.data["object"]["status"])
        for e in Event.objects.filter(type="server.status_changed").order_by("created_at", "id")
    ]
    assert changes == [
        ("provisioning", "installing"),
        ("installing", "stopped"),
        ("stopped", "starting"),
        ("starting", "running"),
    ]


def test_an_action_the_status_does_not_allow_is_invalid_state(owner_api, created):
    response = owner_api.post(
        f"/v1/servers/{created['id']}/actions", {"type": "stop"}, format="json"
    )
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "invalid_state"
    assert error["details"] == {"status": "provisioning", "allowed_actions": []}


def test_a_second_action_while_one_runs_is_action_in_progress(owner_api, created):
    run_worker()
    url = f"/v1/servers/{created['id']}/actions"
    first = owner_api.post(url, {"type": "start"}, format="json").json()["data"]["action"]
    second = owner_api.post(url, {"type": "reinstall"}, format="json")
    assert second.status_code == 409
    assert second.json()["error"]["code"] in {"invalid_state", "action_in_progress"}
    kill = owner_api.post(url, {"type": "kill"}, format="json")
    assert kill.status_code == 202
    assert Action.objects.get(pk=first["id"]).status == "failed"
    assert status_of(owner_api, created["id"]) == "stopped"
    run_worker()
    assert status_of(owner_api, created["id"]) == "stopped"


def test_a_failed_install_ends_in_install_failed_with_the_reason(owner_api, created):
    Server.objects.filter(pk=created["id"]).update(simulation={"fail_install": True})
    run_worker()
    detail = owner_api.get(f"/v1/servers/{created['id']}").json()["data"]["server"]
    assert detail["status"] == "install_failed"
    assert "simulated" in detail["status_reason"]
    assert Event.objects.filter(type="action.failed", related_id=created["id"]).count() == 1


def test_delete_takes_the_server_away(owner_api, created):
    run_worker()
    response = owner_api.delete(f"/v1/servers/{created['id']}")
    assert response.status_code == 202
    assert response.json()["data"]["action"]["type"] == "delete"
    assert status_of(owner_api, created["id"]) == "deleting"
    run_worker()
    assert owner_api.get(f"/v1/servers/{created['id']}").status_code == 404
    assert Server.objects.get(pk=created["id"]).deleted_at is not None
    assert Event.objects.filter(type="server.deleted", object_id=created["id"]).count() == 1
