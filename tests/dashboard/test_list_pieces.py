"""The dashboard lists' search, filters, sorting and pages (hosting/dashboard/lists.py), as the
servers, bots, API keys and activity pages use them: bad input is a notice, never an error page."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import ApiKey
from events.models import Event
from servers.models import Bot
from tests.dashboard import signed_in
from tests.factories import ServerFactory


def names(response, key: str = "servers") -> list[str]:
    return [item.name for item in response.context[key]]


def notices(response) -> list[str]:
    return response.context["listing"].notices


def hrefs(response, rel: str) -> list[str]:
    return re.findall(rf'href="([^"]*)" rel="{rel}"', response.content.decode())


def make_bot(account, name: str, **fields) -> Bot:
    return Bot.objects.create(
        account=account,
        name=name,
        region_id="eu-west",
        runtime=fields.pop("runtime", "node-22"),
        start_command="node bot.js",
        token_encrypted="-",
        token_last4="abcd",
        **fields,
    )


@pytest.fixture
def fleet(account, other_account):
    """Five servers of the account, created a minute apart (Alpha first), and a look-alike
    of another account's."""
    now = timezone.now().replace(microsecond=0)
    specs = [
        ("Alpha SMP", "minecraft-java", "eu-central", "running"),
        ("beta smp", "minecraft-java", "us-east", "stopped"),
        ("Gamma Valheim", "valheim", "eu-central", "running"),
        ("Delta Rust", "rust", "us-east", "install_failed"),
        ("Epsilon SMP", "minecraft-java", "eu-central", "stopped"),
    ]
    servers = [
        ServerFactory(
            account=account,
            name=name,
            game_id=game,
            region_id=region,
            status=status,
            created_at=now - timedelta(minutes=len(specs) - number),
        )
        for number, (name, game, region, status) in enumerate(specs)
    ]
    ServerFactory(account=other_account, name="Alpha SMP of someone else")
    return servers


# --- Search and filters ------------------------------------------------------------------------


def test_search_matches_part_of_the_name_whatever_its_case_or_the_whole_id(owner, fleet):
    client = signed_in(owner)
    assert names(client.get("/", {"q": "  SMP "})) == ["Epsilon SMP", "beta smp", "Alpha SMP"]
    assert names(client.get("/", {"q": fleet[2].id})) == ["Gamma Valheim"]
    assert names(client.get("/", {"q": fleet[2].id[:-1]})) == []  # an id matches only whole


def test_search_and_filters_never_reach_another_accounts_servers(owner, outsider, fleet):
    ours = ServerFactory(account=fleet[0].account, name="Ours")
    response = signed_in(outsider).get("/", {"q": ours.id})
    assert names(response) == []
    assert "No server matches this search or these filters." in response.content.decode()
    assert names(signed_in(outsider).get("/", {"q": "alpha"})) == ["Alpha SMP of someone else"]


def test_filters_combine_with_each_other_and_with_the_search(owner, fleet):
    client = signed_in(owner)
    assert names(client.get("/", {"status": "running"})) == ["Gamma Valheim", "Alpha SMP"]
    assert names(client.get("/", {"game": "minecraft-java", "region": "eu-central"})) == [
        "Epsilon SMP",
        "Alpha SMP",
    ]
    response = client.get("/", {"q": "smp", "status": "stopped"})
    assert names(response) == ["Epsilon SMP", "beta smp"]
    body = response.content.decode()
    assert '<option value="stopped" selected>Stopped</option>' in body
    assert 'name="q" value="smp"' in body
    assert 'id="list-clear" class="button button-small button-quiet" href="/">Clear</a>' in body


def test_an_invalid_filter_value_is_left_out_with_a_notice_and_the_others_still_apply(owner, fleet):
    response = signed_in(owner).get("/", {"status": "exploded", "game": "valheim"})
    assert response.status_code == 200
    assert names(response) == ["Gamma Valheim"]
    assert notices(response) == [
        "The status filter was left out: Select a valid choice. exploded is not one of the "
        "available choices."
    ]
    body = response.content.decode()
    assert 'id="list-notices"' in body
    assert '<option value="" selected>Any status</option>' in body  # what was applied
    assert '<option value="valheim" selected>Valheim</option>' in body
    unknown_game = signed_in(owner).get("/", {"game": "pong"})
    assert len(unknown_game.context["servers"]) == 5
    assert notices(unknown_game)[0].startswith("The game filter was left out:")


def test_a_search_longer_than_anything_searched_is_cut_with_a_notice(owner, fleet):
    response = signed_in(owner).get("/", {"q": "Alpha" + "x" * 300})
    assert response.status_code == 200
    assert names(response) == []
    assert notices(response) == ["The search was cut to its first 254 characters."]
    assert f'name="q" value="Alpha{"x" * 249}"' in response.content.decode()


def test_an_empty_search_or_filter_is_no_search_or_filter(owner, fleet):
    response = signed_in(owner).get("/", {"q": "   ", "status": "", "game": ""})
    assert len(response.context["servers"]) == 5
    assert notices(response) == []
    assert 'id="list-clear"' not in response.content.decode()


def test_the_bots_list_searches_and_filters_by_status_and_runtime(owner, account, other_account):
    make_bot(account, "Moderator", status="running", runtime="python-3.13")
    make_bot(account, "Music", status="stopped")
    make_bot(account, "Greeter", status="running")
    make_bot(other_account, "Moderator of someone else", status="running")
    client = signed_in(owner)
    assert names(client.get("/bots", {"q": "mo"}), "bots") == ["Moderator"]
    assert names(client.get("/bots", {"status": "running"}), "bots") == ["Greeter", "Moderator"]
    assert names(client.get("/bots", {"runtime": "python-3.13"}), "bots") == ["Moderator"]
    response = client.get("/bots", {"sort": "name", "runtime": "cobol"})
    assert names(response, "bots") == ["Greeter", "Moderator", "Music"]
    assert notices(response)[0].startswith("The runtime filter was left out:")


# --- Sorting -----------------------------------------------------------------------------------


def test_sorting_by_an_allowed_key_either_way_and_ignoring_case(owner, fleet):
    client = signed_in(owner)
    ascending = ["Alpha SMP", "beta smp", "Delta Rust", "Epsilon SMP", "Gamma Valheim"]
    assert names(client.get("/", {"sort": "name"})) == ascending
    assert names(client.get("/", {"sort": "-name"})) == ascending[::-1]
    assert names(client.get("/", {"sort": "created_at"})) == [s.name for s in fleet]
    assert names(client.get("/")) == [s.name for s in reversed(fleet)]  # newest first


def test_an_unknown_sort_key_keeps_the_usual_order_with_a_notice(owner, fleet):
    for sort in ["password", "-account__name", "name;drop"]:
        response = signed_in(owner).get("/", {"sort": sort})
        assert response.status_code == 200
        assert names(response) == [s.name for s in reversed(fleet)]
        assert notices(response) == [
            f"This list cannot be sorted by “{sort}”: it is in its usual order."
        ]


def test_sort_headers_keep_the_search_and_filters_and_toggle_the_direction(owner, fleet):
    response = signed_in(owner).get("/", {"q": "smp", "status": "stopped", "sort": "name"})
    body = response.content.decode()
    assert (
        '<th scope="col" aria-sort="ascending"><a class="sort-link" '
        'href="?q=smp&amp;status=stopped&amp;sort=-name">Name <span aria-hidden="true">▲</span>'
    ) in body
    assert 'href="?q=smp&amp;status=stopped&amp;sort=game">Game</a>' in body
    assert 'href="?q=smp&amp;status=stopped&amp;sort=created_at">Created</a>' in body
    # The search form keeps the order.
    assert '<input type="hidden" name="sort" value="name">' in body
    # Toggling back to the usual order (newest first) leaves the parameter out.
    oldest_first = signed_in(owner).get("/", {"sort": "created_at"}).content.decode()
    assert 'aria-sort="ascending"><a class="sort-link" href="/">Created' in oldest_first


def test_rows_with_equal_keys_keep_one_order_across_pages(owner, account):
    now = timezone.now().replace(microsecond=0)
    for _ in range(30):
        ServerFactory(account=account, name="Same", status="running", created_at=now)
    client = signed_in(owner)
    for sort in ["name", "-name", "status", "-created_at"]:
        first = client.get("/", {"sort": sort}).context["servers"]
        second = client.get("/", {"sort": sort, "page": 2}).context["servers"]
        ids = [server.id for server in [*first, *second]]
        assert len(ids) == len(set(ids)) == 30, sort


# --- Pages -------------------------------------------------------------------------------------


@pytest.fixture
def two_pages(account):
    now = timezone.now().replace(microsecond=0)
    return [
        ServerFactory(account=account, name=f"Server {number:02}", created_at=now)
        for number in range(30)
    ]


@pytest.mark.parametrize(
    ("page", "number", "notice"),
    [
        ("abc", 1, "“abc” is not a page number: this is page 1."),
        ("2.5", 1, "“2.5” is not a page number: this is page 1."),
        ("99", 2, "There is no page 99: this is the last page."),
        ("0", 2, "There is no page 0: this is the last page."),
        ("-1", 2, "There is no page -1: this is the last page."),
        ("9" * 5000, 1, f"“{'9' * 19}…” is not a page number: this is page 1."),
        ("last", 2, None),
        ("", 1, None),
        ("2", 2, None),
    ],
)
def test_a_page_that_does_not_exist_is_the_first_or_the_last_with_a_notice(
    owner, two_pages, page, number, notice
):
    response = signed_in(owner).get("/", {"page": page})
    assert response.status_code == 200
    assert response.context["page_obj"].number == number
    assert notices(response) == ([notice] if notice else [])


def test_a_page_past_the_end_of_an_empty_list_is_the_empty_first_page(owner, account):
    response = signed_in(owner).get("/", {"page": "3", "status": "running"})
    assert response.status_code == 200
    assert names(response) == []
    assert notices(response) == ["There is no page 3: this is the last page."]


def test_page_links_keep_what_was_applied_and_drop_what_was_not(owner, two_pages):
    client = signed_in(owner)
    response = client.get("/", {"q": "server", "status": "bogus", "sort": "-name", "page": "x"})
    assert hrefs(response, "next") == ["?q=server&amp;sort=-name&amp;page=2"]
    second = client.get("/", {"q": "server", "sort": "-name", "page": "2"})
    assert hrefs(second, "prev") == ["?q=server&amp;sort=-name"]
    assert notices(second) == []
    assert names(second) == [f"Server {number:02}" for number in range(4, -1, -1)]


def test_the_live_partial_lists_with_the_same_parameters(owner, fleet):
    response = signed_in(owner).get("/", {"partial": "live", "status": "stopped", "sort": "name"})
    body = response.content.decode()
    assert body.strip().startswith('<div id="live" data-live')
    assert names(response) == ["beta smp", "Epsilon SMP"]
    assert "partial=" not in body  # its sort links lead to the full page
    assert 'href="?status=stopped&amp;sort=-name">Name' in body


def test_a_filtered_list_costs_a_fixed_number_of_queries(
    owner, fleet, account, django_assert_max_num_queries
):
    for _ in range(30):
        ServerFactory(account=account, name="More SMP", game_id="minecraft-java")
    client = signed_in(owner)
    params = {"q": "smp", "game": "minecraft-java", "status": "running", "sort": "-name"}
    with django_assert_max_num_queries(9):  # the game filter's lookup, on top of the page's
        response = client.get("/", {**params, "page": "2"})
    assert len(response.context["servers"]) == 6


# --- API keys and activity ---------------------------------------------------------------------


def test_the_keys_list_filters_by_the_keys_own_status_rule(owner, account, make_token):
    for name in ["Deploys", "Old deploys", "Backups", "Rotated"]:
        make_token(owner, account, ["servers:read"], name=name)
    now = timezone.now()
    ApiKey.objects.filter(name="Old deploys").update(expires_at=now - timedelta(days=1))
    ApiKey.objects.filter(name="Backups").update(revoked_at=now - timedelta(days=1))
    # Rotated: revoked at the end of its grace period, still active until then.
    ApiKey.objects.filter(name="Rotated").update(revoked_at=now + timedelta(hours=1))
    client = signed_in(owner)

    def listed(**params) -> list[str]:
        return names(client.get("/settings/api-keys", params), "api_keys")

    assert listed(status="active", sort="name") == ["Deploys", "Rotated"]
    assert listed(status="expired") == ["Old deploys"]
    assert listed(status="revoked") == ["Backups"]
    assert listed(q="deploys", sort="-name") == ["Old deploys", "Deploys"]


def test_searching_keys_by_e_mail_finds_only_keys_the_reader_may_see(
    owner, teammate, account, make_token
):
    make_token(owner, account, ["servers:read"], name="Owner's")
    make_token(teammate, account, ["servers:read"], name="Teammate's")
    by_owner = signed_in(owner).get("/settings/api-keys", {"q": teammate.email})
    assert names(by_owner, "api_keys") == ["Teammate's"]
    by_teammate = signed_in(teammate).get("/settings/api-keys", {"q": owner.email})
    assert names(by_teammate, "api_keys") == []


def test_the_activity_page_filters_by_a_type_or_a_whole_kind_of_object(owner, account):
    for event_type, object_type in [
        ("server.created", "server"),
        ("server.status_changed", "server"),
        ("action.succeeded", "action"),
        ("member.added", "member"),
    ]:
        Event.objects.create(account=account, type=event_type, object_type=object_type)
    client = signed_in(owner)

    def types(params):
        return sorted(
            event.type for event in client.get("/settings/activity", params).context["events"]
        )

    assert types({"type": "server.*"}) == ["server.created", "server.status_changed"]
    assert types({"type": "action.succeeded"}) == ["action.succeeded"]
    body = client.get("/settings/activity", {"type": "server.*"}).content.decode()
    assert '<optgroup label="Servers">' in body
    assert '<option value="server.*" selected>Every server event</option>' in body


def test_an_instance_activity_page_offers_its_own_kind_of_events_only(owner, account):
    server = ServerFactory(account=account)
    for event_type in ["server.created", "action.succeeded"]:
        Event.objects.create(
            account=account,
            type=event_type,
            object_type=event_type.split(".")[0],
            object_id=server.id if event_type.startswith("server") else "act_1",
            related_id="" if event_type.startswith("server") else server.id,
        )
    client = signed_in(owner)
    response = client.get(f"/servers/{server.id}/activity", {"type": "action.*"})
    assert [event.type for event in response.context["events"]] == ["action.succeeded"]
    body = response.content.decode()
    assert '<option value="server.created">server.created</option>' in body
    assert "bot.created" not in body
    refused = client.get(f"/servers/{server.id}/activity", {"type": "bot.*", "page": "7"})
    assert refused.status_code == 200
    assert len(refused.context["events"]) == 2
    assert len(notices(refused)) == 2


def test_only_columns_that_may_be_null_are_sorted_with_nulls_last():
    """NULLS LAST on a never-null column would keep PostgreSQL from reading its index in order."""
    from accounts.models import ApiKey
    from hosting.dashboard.lists import _nullable
    from servers.models import Server

    assert _nullable(ApiKey, "last_used_at") and _nullable(ApiKey, "expires_at")
    assert not _nullable(Server, "name") and not _nullable(Server, "created_at")
    assert not _nullable(ApiKey, "user__email")  # through a required relation
    assert _nullable(ApiKey, "created_by__email")  # through an optional one
    assert _nullable(Server, "an_annotation")
