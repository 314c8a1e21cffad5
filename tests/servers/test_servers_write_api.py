"""Creating and changing servers over the API, who may do it, and what the log records."""

import pytest

from events.models import Event
from servers.models import Action, Server
from tests.envelopes import error_of, field_errors
from tests.servers.helpers import MINECRAFT, run_worker

DEFAULT_VARIABLES = {"EULA": True, "VERSION": "latest", "MAX_PLAYERS": 20, "DIFFICULTY": "normal"}


def create(api, **overrides):
    return api.post("/v1/servers", {**MINECRAFT, **overrides}, format="json")


def created_id(api, **overrides) -> str:
    response = create(api, **overrides)
    assert response.status_code == 201, response.content
    return response.json()["data"]["server"]["id"]


def power(api, server_id: str, action_type: str):
    response = api.post(f"/v1/servers/{server_id}/actions", {"type": action_type}, format="json")
    assert response.status_code == 202, response.content
    return response.json()["data"]["action"]


def running_server(api) -> str:
    server_id = created_id(api)
    run_worker()
    power(api, server_id, "start")
    run_worker()
    assert Server.objects.get(pk=server_id).status == "running"
    return server_id


@pytest.fixture
def nothing_written():
    """After the test: a refused request left no server, action or server event behind."""
    yield
    assert not Server.objects.exists()
    assert not Action.objects.exists()
    assert not Event.objects.filter(type__startswith="server.").exists()


# --- POST /v1/servers ----------------------------------------------------------------------


def test_create_answers_201_with_the_server_in_provisioning(owner_api, owner, account):
    response = create(owner_api, resources={"memory_mb": 4096})
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["success"] is True
    server = body["data"]["server"]
    assert response["Location"] == f"http://testserver/v1/servers/{server['id']}"
    assert server["status"] == "provisioning"
    assert (server["name"], server["game"], server["region"]) == (
        "Survival SMP",
        "minecraft-java",
        "eu-central",
    )
    assert server["resources"] == {"memory_mb": 4096, "cpu_percent": 100, "disk_mb": 10240}
    assert server["variables"] == DEFAULT_VARIABLES
    assert server["auto_restart"] is True
    assert server["address"] == ""

    stored = Server.objects.get(pk=server["id"])
    assert (stored.account, stored.status, stored.memory_mb) == (account, "provisioning", 4096)
    action = Action.objects.get(server=stored)
    assert (action.type, action.status, action.requested_by_user) == ("create", "pending", owner)
    event = Event.objects.get(type="server.created")
    assert event.object_id == server["id"]
    assert event.actor_user == owner
    assert event.data["object"]["status"] == "provisioning"


def test_a_created_server_is_installed_by_the_worker(owner_api):
    server_id = created_id(owner_api)
    run_worker()
    detail = owner_api.get(f"/v1/servers/{server_id}").json()["data"]["server"]
    assert detail["status"] == "stopped"
    assert Action.objects.get(server_id=server_id).status == "succeeded"


def test_start_on_install_leaves_the_server_running(owner_api):
    server_id = created_id(owner_api, start_on_install=True)
    run_worker()
    assert Server.objects.get(pk=server_id).status == "running"


def test_an_unknown_field_is_refused(owner_api, nothing_written):
    response = create(owner_api, max_players=20)
    assert field_errors(response) == [("max_players", "unknown_field")]


def test_missing_fields_are_each_named(owner_api, nothing_written):
    response = owner_api.post("/v1/servers", {}, format="json")
    assert sorted(field_errors(response)) == [
        ("game", "required"),
        ("name", "required"),
        ("region", "required"),
    ]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"name": ""}, [("name", "blank")]),
        ({"name": "   "}, [("name", "blank")]),
        ({"name": "x" * 101}, [("name", "max_length")]),
        ({"game": "tetris"}, [("game", "invalid_choice")]),
        ({"game": "Minecraft-Java"}, [("game", "invalid_choice")]),
        ({"region": "moon-base"}, [("region", "invalid_choice")]),
        ({"auto_restart": "sometimes"}, [("auto_restart", "invalid")]),
    ],
)
def test_invalid_fields_are_named(owner_api, nothing_written, overrides, expected):
    assert field_errors(create(owner_api, **overrides)) == expected


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({}, [("variables.EULA", "required")]),
        ({"EULA": False}, [("variables.EULA", "must_accept")]),
        ({"EULA": "yes"}, [("variables.EULA", "invalid")]),
        ({"EULA": True, "MAX_PLAYERS": 0}, [("variables.MAX_PLAYERS", "out_of_range")]),
        ({"EULA": True, "MAX_PLAYERS": 1001}, [("variables.MAX_PLAYERS", "out_of_range")]),
        ({"EULA": True, "MAX_PLAYERS": "20"}, [("variables.MAX_PLAYERS", "invalid")]),
        ({"EULA": True, "MAX_PLAYERS": True}, [("variables.MAX_PLAYERS", "invalid")]),
        ({"EULA": True, "DIFFICULTY": "insane"}, [("variables.DIFFICULTY", "invalid_choice")]),
        ({"EULA": True, "VERSION": "x" * 17}, [("variables.VERSION", "invalid_length")]),
        ({"EULA": True, "SEED": 42}, [("variables.SEED", "unknown_variable")]),
        (
            {"EULA": False, "MAX_PLAYERS": 5000},
            [("variables.MAX_PLAYERS", "out_of_range"), ("variables.EULA", "must_accept")],
        ),
    ],
)
def test_variables_are_checked_against_the_games_definitions(
    owner_api, nothing_written, variables, expected
):
    response = create(owner_api, variables=variables)
    assert sorted(field_errors(response)) == sorted(expected)


def test_variables_must_be_an_object(owner_api, nothing_written):
    assert field_errors(create(owner_api, variables=["EULA"])) == [("variables", "not_a_dict")]


def test_given_variables_are_kept_and_the_rest_take_their_defaults(owner_api):
    response = create(
        owner_api, variables={"EULA": True, "MAX_PLAYERS": 1000, "DIFFICULTY": "hard"}
    )
    assert response.status_code == 201, response.content
    assert response.json()["data"]["server"]["variables"] == {
        **DEFAULT_VARIABLES,
        "MAX_PLAYERS": 1000,
        "DIFFICULTY": "hard",
    }


def test_a_game_without_a_required_variable_needs_no_variables(owner_api):
    response = create(owner_api, game="rust", variables={})
    assert response.status_code == 201, response.content
    assert response.json()["data"]["server"]["variables"] == {
        "MAX_PLAYERS": 100,
        "WORLD_SIZE": 3500,
        "SEED": 12345,
        "LEVEL": "Procedural Map",
        "RCON_PASSWORD": "",
        "SERVER_NAME": "A Rust server",
    }


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        ({"memory_mb": 255}, [("resources.memory_mb", "out_of_range")]),
        ({"memory_mb": 65537}, [("resources.memory_mb", "out_of_range")]),
        ({"cpu_percent": 9}, [("resources.cpu_percent", "out_of_range")]),
        ({"cpu_percent": 801}, [("resources.cpu_percent", "out_of_range")]),
        ({"disk_mb": 1023}, [("resources.disk_mb", "out_of_range")]),
        ({"memory_mb": "lots"}, [("resources.memory_mb", "invalid")]),
        ({"gpu": 1}, [("resources.gpu", "unknown_field")]),
    ],
)
def test_resources_must_be_within_range(owner_api, nothing_written, resources, expected):
    assert field_errors(create(owner_api, resources=resources)) == expected


def test_the_edges_of_the_resource_ranges_are_accepted(owner_api, account):
    account.max_memory_mb = 65536
    account.save()
    response = create(
        owner_api, resources={"memory_mb": 65536, "cpu_percent": 800, "disk_mb": 1024}
    )
    assert response.status_code == 201, response.content
    assert response.json()["data"]["server"]["resources"] == {
        "memory_mb": 65536,
        "cpu_percent": 800,
        "disk_mb": 1024,
    }


def test_the_server_count_quota_is_enforced(owner_api, account):
    account.max_servers = 2
    account.save()
    created_id(owner_api)
    created_id(owner_api)
    error = error_of(create(owner_api), 422, "quota_exceeded")
    assert error["details"]["limit"] == 2
    assert Server.objects.filter(account=account).count() == 2
    assert Event.objects.filter(type="server.created").count() == 2


def test_a_deleted_server_no_longer_counts_against_the_quota(owner_api, account):
    account.max_servers = 1
    account.save()
    server_id = created_id(owner_api)
    run_worker()
    assert owner_api.delete(f"/v1/servers/{server_id}").status_code == 202
    error_of(create(owner_api), 422, "quota_exceeded")  # still deleting: still counts
    run_worker()
    assert create(owner_api).status_code == 201


def test_the_memory_quota_is_enforced(owner_api, account):
    account.max_memory_mb = 6144
    account.save()
    created_id(owner_api, resources={"memory_mb": 4096})
    error = error_of(create(owner_api, resources={"memory_mb": 2049}), 422, "quota_exceeded")
    assert error["details"]["limit"] == 6144
    assert Server.objects.count() == 1
    assert create(owner_api, resources={"memory_mb": 2048}).status_code == 201


def test_malformed_json_is_invalid_json(owner_api, nothing_written):
    response = owner_api.post(
        "/v1/servers", data='{"name": "Survival",', content_type="application/json"
    )
    error_of(response, 400, "invalid_json")


def test_another_media_type_is_refused(owner_api, nothing_written):
    response = owner_api.post("/v1/servers", data="name=x", content_type="text/plain")
    error_of(response, 415, "unsupported_media_type")


def test_creating_needs_servers_write(account, owner, make_token, client_for, nothing_written):
    reader = client_for(make_token(owner, account, ["servers:read", "servers:power"]))
    error = error_of(create(reader), 403, "insufficient_scope")
    assert error["details"]["required_scopes"] == ["servers:write"]


def test_creating_needs_a_key(client, db, nothing_written):
    response = client.post("/v1/servers", MINECRAFT, content_type="application/json")
    error_of(response, 401, "authentication_required")


# --- PATCH /v1/servers/{id} ----------------------------------------------------------------


def patch(api, server_id: str, body: dict):
    return api.patch(f"/v1/servers/{server_id}", body, format="json")


def test_patch_renames_and_records_the_previous_name(owner_api, owner):
    server_id = created_id(owner_api)
    run_worker()
    response = patch(owner_api, server_id, {"name": "  Creative  "})
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["server"]["name"] == "Creative"
    assert (data["restart_required"], data["restart_required_for"]) == (False, [])
    assert Server.objects.get(pk=server_id).name == "Creative"
    event = Event.objects.get(type="server.updated")
    assert event.object_id == server_id
    assert event.actor_user == owner
    assert event.data["previous_attributes"] == {"name": "Survival SMP"}
    assert event.data["object"]["name"] == "Creative"


def test_patch_without_a_change_records_no_event(owner_api):
    server_id = created_id(owner_api)
    response = patch(owner_api, server_id, {"name": "Survival SMP", "variables": {"EULA": True}})
    assert response.status_code == 200, response.content
    assert not Event.objects.filter(type="server.updated").exists()


def test_patch_merges_variables_with_the_current_values(owner_api):
    server_id = created_id(owner_api)
    first = patch(owner_api, server_id, {"variables": {"MAX_PLAYERS": 50}})
    assert first.status_code == 200, first.content
    second = patch(owner_api, server_id, {"variables": {"DIFFICULTY": "hard"}})
    assert second.status_code == 200, second.content
    expected = {**DEFAULT_VARIABLES, "MAX_PLAYERS": 50, "DIFFICULTY": "hard"}
    assert second.json()["data"]["server"]["variables"] == expected
    assert Server.objects.get(pk=server_id).variables == expected
    last = Event.objects.filter(type="server.updated").first()
    assert last.data["previous_attributes"] == {
        "variables": {**DEFAULT_VARIABLES, "MAX_PLAYERS": 50}
    }


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"EULA": False}, [("variables.EULA", "must_accept")]),
        ({"MAX_PLAYERS": 0}, [("variables.MAX_PLAYERS", "out_of_range")]),
        ({"DIFFICULTY": "insane"}, [("variables.DIFFICULTY", "invalid_choice")]),
        ({"SEED": 1}, [("variables.SEED", "unknown_variable")]),
    ],
)
def test_patch_checks_variables_and_changes_nothing_when_refused(owner_api, variables, expected):
    server_id = created_id(owner_api)
    assert field_errors(patch(owner_api, server_id, {"variables": variables})) == expected
    assert Server.objects.get(pk=server_id).variables == DEFAULT_VARIABLES
    assert not Event.objects.filter(type="server.updated").exists()


def test_patch_refuses_unknown_fields(owner_api):
    server_id = created_id(owner_api)
    assert field_errors(patch(owner_api, server_id, {"game": "rust"})) == [
        ("game", "unknown_field")
    ]
    assert Server.objects.get(pk=server_id).game_id == "minecraft-java"


def test_patch_changes_resources_within_the_memory_quota(owner_api, account):
    account.max_memory_mb = 4096
    account.save()
    server_id = created_id(owner_api)
    grown = patch(owner_api, server_id, {"resources": {"memory_mb": 4096, "cpu_percent": 200}})
    assert grown.status_code == 200, grown.content
    assert grown.json()["data"]["server"]["resources"] == {
        "memory_mb": 4096,
        "cpu_percent": 200,
        "disk_mb": 10240,
    }
    error = error_of(
        patch(owner_api, server_id, {"resources": {"memory_mb": 4097}}), 422, "quota_exceeded"
    )
    assert error["details"]["limit"] == 4096
    assert Server.objects.get(pk=server_id).memory_mb == 4096
    assert patch(owner_api, server_id, {"resources": {"memory_mb": 1024}}).status_code == 200
    out_of_range = patch(owner_api, server_id, {"resources": {"disk_mb": 10}})
    assert field_errors(out_of_range) == [("resources.disk_mb", "out_of_range")]
    assert Server.objects.get(pk=server_id).disk_mb == 10240


def test_a_stopped_server_needs_no_restart_after_a_change(owner_api):
    server_id = created_id(owner_api)
    run_worker()
    response = patch(owner_api, server_id, {"resources": {"memory_mb": 1024}})
    assert response.json()["data"]["restart_required"] is False


def test_a_running_server_needs_a_restart_for_resources_and_variables(owner_api):
    server_id = running_server(owner_api)
    renamed = patch(owner_api, server_id, {"name": "Renamed", "auto_restart": False})
    assert renamed.json()["data"]["restart_required"] is False
    changed = patch(
        owner_api,
        server_id,
        {"resources": {"memory_mb": 1024}, "variables": {"MAX_PLAYERS": 10}},
    )
    data = changed.json()["data"]
    assert data["restart_required"] is True
    assert sorted(data["restart_required_for"]) == ["memory_mb", "variables"]
    same_again = patch(owner_api, server_id, {"resources": {"memory_mb": 1024}})
    assert same_again.json()["data"]["restart_required"] is False


def test_a_starting_server_needs_a_restart_after_a_change(owner_api):
    server_id = created_id(owner_api)
    run_worker()
    power(owner_api, server_id, "start")
    response = patch(owner_api, server_id, {"variables": {"DIFFICULTY": "easy"}})
    assert response.json()["data"]["server"]["status"] == "starting"
    assert response.json()["data"]["restart_required_for"] == ["variables"]


def test_a_server_being_deleted_cannot_be_changed(owner_api):
    server_id = created_id(owner_api)
    run_worker()
    assert owner_api.delete(f"/v1/servers/{server_id}").status_code == 202
    error = error_of(patch(owner_api, server_id, {"name": "Too late"}), 409, "invalid_state")
    assert error["message"] == "A server being deleted cannot be changed."
    assert error["details"] == {"status": "deleting", "allowed_actions": []}
    assert Server.objects.get(pk=server_id).name == "Survival SMP"
    run_worker()
    error_of(patch(owner_api, server_id, {"name": "Gone"}), 404, "not_found")


# --- Who may do what -----------------------------------------------------------------------


@pytest.fixture
def developer_api(teammate, account, make_token, client_for):
    return client_for(
        make_token(teammate, account, ["servers:write", "servers:power", "bots:write"])
    )


def test_a_teammate_works_on_the_owners_servers(owner_api, developer_api, teammate):
    server_id = created_id(owner_api)
    run_worker()
    assert developer_api.get(f"/v1/servers/{server_id}").status_code == 200
    assert patch(developer_api, server_id, {"name": "Team SMP"}).status_code == 200
    power(developer_api, server_id, "start")
    assert Event.objects.get(type="server.updated").actor_user == teammate
    assert Action.objects.get(type="start").requested_by_user == teammate
    run_worker()
    assert developer_api.delete(f"/v1/servers/{server_id}").status_code == 202


def test_a_teammate_with_a_read_key_can_only_read(owner_api, teammate_api):
    server_id = created_id(owner_api)
    run_worker()
    assert teammate_api.get(f"/v1/servers/{server_id}").status_code == 200
    for response, scope in (
        (patch(teammate_api, server_id, {"name": "Mine"}), "servers:write"),
        (teammate_api.delete(f"/v1/servers/{server_id}"), "servers:write"),
        (
            teammate_api.post(f"/v1/servers/{server_id}/actions", {"type": "start"}, format="json"),
            "servers:power",
        ),
    ):
        assert error_of(response, 403, "insufficient_scope")["details"] == {
            "required_scopes": [scope]
        }
    assert Server.objects.get(pk=server_id).status == "stopped"


@pytest.fixture
def bot_of_owner(owner_api) -> str:
    response = owner_api.post(
        "/v1/bots",
        {
            "name": "Helper",
            "region": "eu-central",
            "runtime": "python-3.13",
            "start_command": "python bot.py",
            "token": "a-discord-bot-token-of-30-chars",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()["data"]["bot"]["id"]


def test_an_outsider_gets_not_found_on_every_url_of_the_account(
    owner_api, outsider_api, bot_of_owner
):
    server_id = created_id(owner_api)
    run_worker()
    server_action = Action.objects.get(server_id=server_id).id
    bot_action = Action.objects.get(bot_id=bot_of_owner).id
    events_before = Event.objects.count()
    requests = [
        (outsider_api.get, f"/v1/{kind}s/{target}", None)
        for kind, target in (("server", server_id), ("bot", bot_of_owner))
    ]
    for kind, target in (("server", server_id), ("bot", bot_of_owner)):
        requests += [
            (outsider_api.patch, f"/v1/{kind}s/{target}", {"name": "Pwned"}),
            (outsider_api.delete, f"/v1/{kind}s/{target}", None),
            (outsider_api.post, f"/v1/{kind}s/{target}/actions", {"type": "start"}),
            (outsider_api.get, f"/v1/{kind}s/{target}/actions", None),
            (outsider_api.get, f"/v1/{kind}s/{target}/activity", None),
        ]
    requests += [
        (outsider_api.get, f"/v1/actions/{server_action}", None),
        (outsider_api.get, f"/v1/actions/{bot_action}", None),
    ]
    for method, url, body in requests:
        response = method(url, body, format="json") if body else method(url)
        error_of(response, 404, "not_found")
    assert Event.objects.count() == events_before
    assert Server.objects.get(pk=server_id).name == "Survival SMP"
    assert Server.objects.get(pk=server_id).status == "stopped"
    assert Action.objects.filter(server_id=server_id).count() == 1


def test_a_bulk_action_on_an_outsiders_ids_is_not_found_per_id(owner_api, outsider_api):
    server_id = created_id(owner_api)
    run_worker()
    response = outsider_api.post(
        "/v1/servers/actions", {"type": "start", "server_ids": [server_id]}, format="json"
    )
    assert response.status_code == 200, response.content
    [result] = response.json()["data"]["results"]
    assert result["id"] == server_id
    assert result["accepted"] is False
    assert result["error"]["code"] == "not_found"
    assert Server.objects.get(pk=server_id).status == "stopped"


# --- Roles change what a key may do at once (customer-management acceptance) -------------


def test_demoting_a_developer_to_viewer_demotes_their_key_and_removing_them_voids_it(
    owner_api, developer_api, teammate
):
    assert create(developer_api, name="Dev server").status_code == 201

    demoted = owner_api.patch(
        f"/v1/account/members/{teammate.id}", {"role": "viewer"}, format="json"
    )
    assert demoted.status_code == 200, demoted.content
    error = error_of(create(developer_api, name="Another"), 403, "insufficient_scope")
    assert error["details"]["required_scopes"] == ["servers:write"]
    assert developer_api.get("/v1/servers").status_code == 200  # viewers still read
    assert Server.objects.count() == 1

    removed = owner_api.delete(f"/v1/account/members/{teammate.id}")
    assert removed.status_code == 200, removed.content
    error_of(create(developer_api, name="Another"), 401, "invalid_api_key")
    error_of(developer_api.get("/v1/servers"), 401, "invalid_api_key")
    assert Server.objects.count() == 1
