"""The Files tab's pages without a live agent: who sees the tab, who may read and who may change,
and how a node that does not answer is shown. (Working on real files, with a real agent and
Chromium, is tests/browser/test_files_flow.py.)"""

import pytest

from accounts.roles import Role
from tests.dashboard import signed_in
from tests.dashboard.test_console_pages import placed  # noqa: F401 - the fixture
from tests.factories import MembershipFactory, ServerFactory

pytestmark = pytest.mark.django_db


def member(account, role):
    return MembershipFactory(account=account, role=role).user


def test_the_tab_shows_for_readers_of_files_on_a_node(owner, account, placed):  # noqa: F811
    client = signed_in(owner)
    assert (
        f'href="/servers/{placed.id}/files"' in client.get(f"/servers/{placed.id}").content.decode()
    )
    for role in (Role.VIEWER, Role.BILLING):
        page = signed_in(member(account, role)).get(f"/servers/{placed.id}").content.decode()
        assert "files-link" not in page, role
    # On no node (the simulated driver) there is no tab, and the page says why.
    simulated = ServerFactory(account=account)
    assert "files-link" not in client.get(f"/servers/{simulated.id}").content.decode()
    page = client.get(f"/servers/{simulated.id}/files").content.decode()
    assert "runs on no node" in page


def test_a_node_that_does_not_answer_is_said_on_the_page(owner, placed):  # noqa: F811
    client = signed_in(owner)
    page = client.get(f"/servers/{placed.id}/files?path=/plugins&sort=-size&page=2")
    assert page.status_code == 200
    html = page.content.decode()
    assert "cannot be reached right now" in html
    assert 'data-path="/plugins"' in html
    editor = client.get(f"/servers/{placed.id}/files/edit?path=/server.properties")
    assert "cannot be reached right now" in editor.content.decode()


def test_a_viewer_is_sent_back_with_a_message(account, placed):  # noqa: F811
    client = signed_in(member(account, Role.VIEWER))
    refused = client.get(f"/servers/{placed.id}/files", follow=True)
    assert refused.redirect_chain[-1][0] == f"/servers/{placed.id}"
    assert "you may not read this server" in refused.content.decode()


def test_support_reads_but_may_not_change(account, placed):  # noqa: F811
    client = signed_in(member(account, Role.SUPPORT))
    assert client.get(f"/servers/{placed.id}/files").status_code == 200
    answer = client.post(
        f"/servers/{placed.id}/files/do",
        {"op": "delete", "paths": ["/world"]},
        content_type="application/json",
    )
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "permission_denied"


def test_an_outsider_gets_404(outsider, placed):  # noqa: F811
    client = signed_in(outsider)
    for path in ("files", "files/edit?path=/a", "files/download?path=/a"):
        assert client.get(f"/servers/{placed.id}/{path}").status_code == 404, path
    assert client.post(f"/servers/{placed.id}/files/do", {}).status_code == 404


@pytest.mark.parametrize(
    "body,status,code",
    [
        ("not json", 400, "invalid_json"),
        ('{"paths": ["/a"]}', 400, "validation_failed"),
        ('{"op": "format_disk"}', 400, "validation_failed"),
        ('{"op": "upload_url"}', 400, "validation_failed"),
        ('{"op": "delete", "paths": ["/a"]}', 503, "service_unavailable"),
    ],
)
def test_the_pages_calls_answer_in_the_envelope(owner, placed, body, status, code):  # noqa: F811
    answer = signed_in(owner).post(
        f"/servers/{placed.id}/files/do", body, content_type="application/json"
    )
    assert answer.status_code == status
    assert answer.json()["success"] is False and answer.json()["error"]["code"] == code


def test_a_suspended_account_reads_but_does_not_change(owner, account, placed):  # noqa: F811
    account.status = "suspended"
    account.save()
    client = signed_in(owner)
    answer = client.post(
        f"/servers/{placed.id}/files/do", '{"op": "folder"}', content_type="application/json"
    )
    assert answer.status_code == 403
