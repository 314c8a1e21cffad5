"""Who may reach a server's or bot's files through the API, and what is refused before the node
is asked: the owner and a teammate with the files scopes get through (here to a 409, as the
instance runs on the simulated driver: no node, no files), an outsider gets 404, a key without
the files scopes or a Viewer's key 403, and bad input 400. The work itself, against a real
agent, is in tests/agent/test_files_control_plane.py."""

import pytest

from accounts.roles import ROLE_SCOPES, Role
from servers.models import ServerStatus
from tests.envelopes import error_of, field_errors, parameter_errors
from tests.factories import BotFactory, MembershipFactory, ServerFactory

pytestmark = pytest.mark.django_db

READS = [
    ("get", "files?path=/", None),
    ("get", "files/stat?path=/", None),
    ("get", "files/search?query=log", None),
    ("get", "files/contents?path=/server.properties", None),
    ("post", "files/download-url", {"path": "/world.zip"}),
]
WRITES = [
    ("post", "files/upload-url", {"path": "/world.zip"}),
    ("put", "files/contents", {"path": "/a.txt", "content": "x"}),
    ("post", "files/folders", {"path": "/plugins"}),
    ("post", "files/rename", {"from": "/a.txt", "to": "/b.txt"}),
    ("post", "files/copy", {"from": "/a.txt", "to": "/b.txt"}),
    ("post", "files/delete", {"paths": ["/a.txt"]}),
    ("post", "files/chmod", {"path": "/a.txt", "mode": "644"}),
    ("post", "files/compress", {"paths": ["/world"]}),
    ("post", "files/decompress", {"path": "/mods.zip"}),
]


@pytest.fixture
def server(account):
    return ServerFactory(account=account)


@pytest.fixture
def bot(account):
    return BotFactory(account=account)


def call(api, instance, method, suffix, body):
    base = f"/v1/{instance.kind}s/{instance.pk}/"
    return getattr(api, method)(base + suffix, body, format="json")


@pytest.mark.parametrize("method,suffix,body", READS + WRITES)
@pytest.mark.parametrize("kind", ["server", "bot"])
def test_the_owner_gets_through_to_the_node_and_an_outsider_gets_404(
    owner_api, outsider_api, server, bot, kind, method, suffix, body
):
    instance = server if kind == "server" else bot
    error = error_of(call(owner_api, instance, method, suffix, body), 409, "files_unavailable")
    assert "runs on no node" in error["message"]
    error_of(call(outsider_api, instance, method, suffix, body), 404, "not_found")


@pytest.mark.parametrize("method,suffix,body", READS + WRITES)
def test_a_teammate_needs_the_files_scopes(
    teammate, account, make_token, client_for, server, method, suffix, body
):
    needed = "files:read" if (method, suffix, body) in READS else "files:write"
    without = client_for(make_token(teammate, account, ["servers:read", "servers:write"]))
    error = error_of(call(without, server, method, suffix, body), 403, "insufficient_scope")
    assert error["details"]["required_scopes"] == ["servers:read", needed]
    # files:write implies files:read; the instance's own read scope is needed beside it.
    with_files = client_for(make_token(teammate, account, ["servers:read", "files:write"]))
    error_of(call(with_files, server, method, suffix, body), 409, "files_unavailable")
    only_files = client_for(make_token(teammate, account, ["files:write"]))
    error_of(call(only_files, server, method, suffix, body), 403, "insufficient_scope")


def test_which_roles_may_hold_the_files_scopes():
    for role in (Role.OWNER, Role.ADMIN, Role.DEVELOPER):
        assert {"files:read", "files:write"} <= ROLE_SCOPES[role]
    assert "files:read" in ROLE_SCOPES[Role.SUPPORT]
    assert "files:write" not in ROLE_SCOPES[Role.SUPPORT]
    for role in (Role.BILLING, Role.VIEWER):
        assert not {"files:read", "files:write"} & ROLE_SCOPES[role]


def test_a_viewers_key_reads_no_files(account, make_token, client_for, server):
    viewer = MembershipFactory(account=account, role=Role.VIEWER).user
    api = client_for(make_token(viewer, account, ["servers:read"]))
    error_of(api.get(f"/v1/servers/{server.pk}/files"), 403, "insufficient_scope")


@pytest.mark.parametrize("status", [ServerStatus.SUSPENDED, ServerStatus.DELETING])
def test_the_files_of_a_suspended_or_deleting_server_are_closed(owner_api, account, status):
    server = ServerFactory(account=account, status=status)
    error = error_of(owner_api.get(f"/v1/servers/{server.pk}/files"), 409, "invalid_state")
    assert error["details"]["status"] == status


@pytest.mark.parametrize(
    "query,parameter,code",
    [
        ("ordering=owner", "ordering", "invalid"),
        ("per_page=101", "per_page", "max_value"),
        ("page=0", "page", "min_value"),
        ("path=", "path", "blank"),
        ("path=/a&path=/b", "path", "multiple_values"),
        (f"path=/{'a' * 4097}", "path", "max_length"),
    ],
)
def test_a_bad_list_query_is_refused_by_name(owner_api, server, query, parameter, code):
    answer = owner_api.get(f"/v1/servers/{server.pk}/files?{query}")
    assert parameter_errors(answer) == [(parameter, code)]


def test_reading_contents_and_searching_need_their_parameter(owner_api, server):
    answer = owner_api.get(f"/v1/servers/{server.pk}/files/contents")
    assert parameter_errors(answer) == [("path", "required")]
    answer = owner_api.get(f"/v1/servers/{server.pk}/files/search")
    assert parameter_errors(answer) == [("query", "required")]


@pytest.mark.parametrize(
    "suffix,body,expected",
    [
        ("files/contents", {"path": "/a"}, [("content", "required")]),
        ("files/contents", {"path": "/a", "content": 3}, [("content", "invalid")]),
        ("files/folders", {"path": "/a", "mode": "755"}, [("mode", "unknown_field")]),
        ("files/rename", {"from": "/a"}, [("to", "required")]),
        ("files/delete", {"paths": []}, [("paths", "min_length")]),
        ("files/delete", {"paths": ["/a"] * 1001}, [("paths", "max_length")]),
        ("files/chmod", {"path": "/a", "mode": "4755"}, [("mode", "invalid")]),
        ("files/chmod", {"path": "/a", "mode": "rwx"}, [("mode", "invalid")]),
        ("files/compress", {"paths": ["/a"], "format": "rar"}, [("format", "invalid_choice")]),
        ("files/decompress", {"path": "/a", "overwrite": "yes"}, [("overwrite", "invalid")]),
        ("files/pull", {"url": "ftp://example.com/a", "path": "/a"}, [("url", "invalid")]),
        ("files/pull", {"url": "https://example.com/a"}, [("path", "required")]),
    ],
)
def test_a_bad_body_is_refused_by_field(owner_api, server, suffix, body, expected):
    method = "put" if suffix == "files/contents" else "post"
    answer = getattr(owner_api, method)(f"/v1/servers/{server.pk}/{suffix}", body, format="json")
    assert field_errors(answer) == expected
