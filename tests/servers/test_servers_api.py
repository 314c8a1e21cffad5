import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from servers.models import ServerStatus
from tests.conftest import auth_queries
from tests.factories import ServerFactory

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@pytest.fixture
def fleet(account, other_account):
    base = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    ours = [
        ServerFactory(
            account=account,
            name="Alpha SMP",
            game_id="minecraft-java",
            status=ServerStatus.RUNNING,
            created_at=base,
        ),
        ServerFactory(
            account=account,
            name="Bravo Valheim",
            game_id="valheim",
            status=ServerStatus.STOPPED,
            created_at=base + timedelta(days=1),
        ),
        ServerFactory(
            account=account,
            name="Charlie Rust",
            game_id="rust",
            status=ServerStatus.RUNNING,
            created_at=base + timedelta(days=2),
        ),
        ServerFactory(
            account=account,
            name="Delta smp",
            game_id="minecraft-java",
            status=ServerStatus.SUSPENDED,
            created_at=base + timedelta(days=3),
        ),
    ]
    theirs = ServerFactory(account=other_account, name="Alpha Secret", created_at=base)
    return ours, theirs


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [server["id"] for server in response.json()["data"]["servers"]]


def test_the_list_follows_the_seed(owner_api, fleet):
    body = owner_api.get("/v1/servers").json()
    assert body["success"] is True
    assert set(body["data"]) == {"servers", "pagination"}
    assert body["data"]["pagination"] == {"page": 1, "per_page": 25, "total": 4, "total_pages": 1}
    for server in body["data"]["servers"]:
        assert set(server) == {"id", "name", "game", "status", "created_at"}
        assert re.fullmatch(r"srv_[0-9A-Za-z]{24}", server["id"])
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", server["game"])
        assert TIMESTAMP.match(server["created_at"])
    assert body["data"]["servers"][0] == {
        "id": fleet[0][3].id,
        "name": "Delta smp",
        "game": "minecraft-java",
        "status": "suspended",
        "created_at": "2026-11-04T12:00:00Z",
    }


def test_the_default_order_is_newest_first(owner_api, fleet):
    ours, _ = fleet
    assert ids(owner_api.get("/v1/servers")) == [s.id for s in reversed(ours)]


def test_owner_and_teammate_see_the_accounts_servers_and_the_outsider_does_not(
    owner_api, teammate_api, outsider_api, fleet
):
    ours, theirs = fleet
    expected = sorted(s.id for s in ours)
    assert sorted(ids(owner_api.get("/v1/servers"))) == expected
    assert sorted(ids(teammate_api.get("/v1/servers"))) == expected
    assert ids(outsider_api.get("/v1/servers")) == [theirs.id]


def test_a_server_of_another_account_is_not_found(owner_api, outsider_api, fleet):
    ours, theirs = fleet
    assert owner_api.get(f"/v1/servers/{ours[0].id}").status_code == 200
    for api, server in ((owner_api, theirs), (outsider_api, ours[0])):
        response = api.get(f"/v1/servers/{server.id}")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
    missing = owner_api.get("/v1/servers/srv_000000000000000000000000")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"


def test_the_detail_view_adds_updated_at(teammate_api, fleet):
    server = fleet[0][1]
    body = teammate_api.get(f"/v1/servers/{server.id}").json()
    assert body["success"] is True
    detail = body["data"]["server"]
    assert detail["id"] == server.id
    assert detail["name"] == "Bravo Valheim"
    assert detail["game"] == "valheim"
    assert detail["status"] == "stopped"
    assert detail["created_at"] == "2026-11-02T12:00:00Z"
    assert TIMESTAMP.match(detail["updated_at"])


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("status=running", ["Charlie Rust", "Alpha SMP"]),
        ("status=running,stopped", ["Charlie Rust", "Bravo Valheim", "Alpha SMP"]),
        ("game=minecraft-java", ["Delta smp", "Alpha SMP"]),
        ("game=minecraft-java&status=running", ["Alpha SMP"]),
        ("search=smp", ["Delta smp", "Alpha SMP"]),
        ("search=SECRET", []),
        ("created_after=2026-11-03T00:00:00Z", ["Delta smp", "Charlie Rust"]),
        ("created_before=2026-11-02T12:00:00Z", ["Alpha SMP"]),
        (
            "created_after=2026-11-02T00:00:00Z&created_before=2026-11-04T00:00:00Z",
            ["Charlie Rust", "Bravo Valheim"],
        ),
        ("ordering=name", ["Alpha SMP", "Bravo Valheim", "Charlie Rust", "Delta smp"]),
        ("ordering=-name", ["Delta smp", "Charlie Rust", "Bravo Valheim", "Alpha SMP"]),
        ("ordering=created_at", ["Alpha SMP", "Bravo Valheim", "Charlie Rust", "Delta smp"]),
        ("ordering=status", ["Charlie Rust", "Alpha SMP", "Bravo Valheim", "Delta smp"]),
        ("unknown_parameter=1", ["Delta smp", "Charlie Rust", "Bravo Valheim", "Alpha SMP"]),
    ],
)
def test_filters_and_ordering(owner_api, fleet, query, names):
    response = owner_api.get(f"/v1/servers?{query}")
    assert response.status_code == 200, response.content
    assert [s["name"] for s in response.json()["data"]["servers"]] == names
    assert response.json()["data"]["pagination"]["total"] == len(names)


def test_search_by_id_finds_only_own_servers(owner_api, fleet):
    ours, theirs = fleet
    assert ids(owner_api.get(f"/v1/servers?search={ours[2].id}")) == [ours[2].id]
    assert ids(owner_api.get(f"/v1/servers?search={theirs.id}")) == []


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("status=exploded", "status"),
        ("status=running,exploded", "status"),
        ("game=not-a-game", "game"),
        ("created_after=yesterday", "created_after"),
        ("created_before=2026-13-45", "created_before"),
        ("ordering=password", "ordering"),
    ],
)
def test_an_unknown_filter_value_gets_invalid_parameter(owner_api, fleet, query, parameter):
    response = owner_api.get(f"/v1/servers?{query}")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_parameter"
    assert [p["name"] for p in error["details"]["parameters"]] == [parameter]


@pytest.mark.parametrize("per_page", [1, 25, 100])
def test_the_list_runs_a_fixed_number_of_queries_whatever_the_page_size(
    owner_api, account, per_page
):
    ServerFactory.create_batch(120, account=account)
    owner_api.get("/v1/servers")  # the first call records last use; steady state follows
    with CaptureQueriesContext(connection) as queries:
        response = owner_api.get(f"/v1/servers?per_page={per_page}")
    assert len(response.json()["data"]["servers"]) == per_page
    # The page with its total (one statement), plus the key with its user, account and role
    # unless it comes from the shared cache (Redis): one query in steady state with Redis.
    assert len(queries) == 1 + auth_queries(), [q["sql"] for q in queries]


def test_the_list_writes_nothing_in_steady_state(owner_api, fleet):
    owner_api.get("/v1/servers")
    with CaptureQueriesContext(connection) as queries:
        for _ in range(5):
            assert owner_api.get("/v1/servers").status_code == 200
    writes = [q["sql"] for q in queries if not q["sql"].lstrip().upper().startswith("SELECT")]
    assert writes == []


def test_the_game_catalogue_lists_real_games(teammate_api):
    response = teammate_api.get("/v1/games?per_page=100")
    assert response.status_code == 200
    games = response.json()["data"]["games"]
    slugs = {game["slug"] for game in games}
    assert len(games) >= 15
    assert {
        "minecraft-java",
        "minecraft-bedrock",
        "rust",
        "valheim",
        "counter-strike-2",
        "terraria",
        "ark-survival-evolved",
        "palworld",
        "garrys-mod",
        "factorio",
        "7-days-to-die",
        "project-zomboid",
        "satisfactory",
        "enshrouded",
        "team-fortress-2",
    } <= slugs
    minecraft = next(game for game in games if game["slug"] == "minecraft-java")
    assert {k: minecraft[k] for k in ("slug", "name", "default_port")} == {
        "slug": "minecraft-java",
        "name": "Minecraft: Java Edition",
        "default_port": 25565,
    }
    eula = next(v for v in minecraft["variables"] if v["key"] == "EULA")
    assert (eula["required"], eula["must_be"]) == (True, True)
    assert response.json()["data"]["pagination"]["total"] == len(games)


def test_the_game_catalogue_needs_a_key(db, client):
    response = client.get("/v1/games")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_required"
