"""The tickets API as customers use it: open, list with filters and search, read the
conversation (never an internal note), reply, close, reopen and rate; the owner, a teammate
and an outsider; scopes."""

import pytest

from accounts.actors import Actor
from events.models import Event
from support.models import Ticket
from support.services.tickets import ticket_reply, ticket_status_change
from tests.billing.api.conftest import data_of, listed
from tests.envelopes import error_of
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def teammate_tickets_api(teammate, account, make_token, client_for):
    return client_for(make_token(teammate, account, ["tickets:read", "tickets:write"]))


def open_one(api, department, **body):
    answer = api.post(
        "/v1/tickets",
        {
            "subject": "Server stops at 'Loading world'",
            "body": "Since the update.",
            "department": department.id,
            **body,
        },
        format="json",
    )
    return data_of(answer, 201)["ticket"]


def test_a_customer_opens_a_ticket_about_their_server(owner_api, owner, account, technical):
    server = ServerFactory(account=account)

    answer = owner_api.post(
        "/v1/tickets",
        {
            "subject": "Lag spikes",
            "body": "Every evening.",
            "department": technical.id,
            "priority": "high",
            "server": server.id,
        },
        format="json",
    )

    ticket = data_of(answer, 201)["ticket"]
    assert answer["Location"].endswith(f"/v1/tickets/{ticket['id']}")
    assert (ticket["status"], ticket["priority"], ticket["channel"]) == ("open", "high", "api")
    assert ticket["server"] == server.id and ticket["requester"]["user"] == owner.id
    assert "assignee" not in ticket and "sla" not in ticket
    [message] = data_of(owner_api.get(f"/v1/tickets/{ticket['id']}/messages"))["messages"]
    assert (message["body"], message["author"]["staff"]) == ("Every evening.", False)


def test_bad_input_is_named(owner_api, account, other_account, technical):
    theirs = ServerFactory(account=other_account)
    cases = [
        ({"subject": "", "body": "x", "department": technical.id}, "subject"),
        ({"subject": "x", "body": "x", "department": "dept_nope"}, "department"),
        ({"subject": "x", "body": "x", "department": technical.id, "server": theirs.id}, "server"),
        ({"subject": "x", "body": "x", "department": technical.id, "priority": "now"}, "priority"),
        ({"subject": "x", "body": "x", "department": technical.id, "status": "closed"}, "status"),
    ]
    for body, field in cases:
        error = error_of(owner_api.post("/v1/tickets", body, format="json"), 400)
        assert error["code"] == "validation_failed"
        assert [each["name"] for each in error["details"]["fields"]] == [field]
    assert not Ticket.objects.exists()


def test_the_account_s_tickets_are_its_members_and_no_one_else_s(
    owner_api, teammate_tickets_api, outsider_api, technical
):
    ticket = open_one(owner_api, technical)

    assert listed(teammate_tickets_api.get("/v1/tickets"), "tickets") == [ticket["id"]]
    assert data_of(teammate_tickets_api.get(f"/v1/tickets/{ticket['id']}"))["ticket"]["id"]
    assert listed(outsider_api.get("/v1/tickets"), "tickets") == []
    for call in (
        outsider_api.get(f"/v1/tickets/{ticket['id']}"),
        outsider_api.get(f"/v1/tickets/{ticket['id']}/messages"),
        outsider_api.post(f"/v1/tickets/{ticket['id']}/messages", {"body": "x"}, format="json"),
        outsider_api.post(f"/v1/tickets/{ticket['id']}/close", {}, format="json"),
    ):
        assert error_of(call, 404)["code"] == "not_found"
    assert Ticket.objects.get(pk=ticket["id"]).status == "open"


def test_reading_needs_tickets_read_and_changing_tickets_write(
    owner, account, make_token, client_for, technical
):
    reader = client_for(make_token(owner, account, ["tickets:read"]))
    unscoped = client_for(make_token(owner, account, ["servers:read"]))

    assert error_of(unscoped.get("/v1/tickets"), 403)["code"] == "insufficient_scope"
    assert reader.get("/v1/tickets").status_code == 200
    refused = reader.post(
        "/v1/tickets", {"subject": "x", "body": "y", "department": technical.id}, format="json"
    )
    assert error_of(refused, 403)["details"]["required_scopes"] == ["tickets:write"]


def test_internal_notes_never_reach_the_customer(owner_api, account, technical, agent):
    ticket = open_one(owner_api, technical)
    stored = Ticket.objects.get(pk=ticket["id"])
    ticket_reply(
        ticket=stored,
        body="Customer is abusive; careful.",
        actor=Actor(user=agent),
        by_staff=True,
        channel="web",
        internal=True,
    )
    ticket_reply(
        ticket=stored,
        body="Restored the backup.",
        actor=Actor(user=agent),
        by_staff=True,
        channel="web",
    )

    messages = data_of(owner_api.get(f"/v1/tickets/{ticket['id']}/messages"))["messages"]

    assert [each["body"] for each in messages] == ["Since the update.", "Restored the backup."]
    assert "abusive" not in owner_api.get(f"/v1/tickets/{ticket['id']}/messages").content.decode()
    for event in Event.objects.filter(object_id=ticket["id"]):
        assert "abusive" not in str(event.data)


def test_reply_close_reopen_and_rate(owner_api, account, technical, agent):
    ticket = open_one(owner_api, technical)
    path = f"/v1/tickets/{ticket['id']}"

    replied = owner_api.post(f"{path}/messages", {"body": "Any news?"}, format="json")
    assert data_of(replied, 201)["message"]["body"] == "Any news?"
    refused = owner_api.post(f"{path}/reopen", {}, format="json")
    assert error_of(refused, 409)["details"]["status"] == "open"
    ticket_status_change(
        ticket=Ticket.objects.get(pk=ticket["id"]),
        status="resolved",
        actor=Actor(user=agent),
        by_staff=True,
    )
    rated = owner_api.post(f"{path}/rate", {"rating": 5, "comment": "Fast"}, format="json")
    assert data_of(rated)["ticket"]["rating"] == 5
    assert data_of(owner_api.post(f"{path}/reopen", {}, format="json"))["ticket"]["status"] == (
        "open"
    )
    closed = owner_api.post(f"{path}/close", {}, format="json")
    assert data_of(closed)["ticket"]["status"] == "closed"
    late = owner_api.post(f"{path}/messages", {"body": "One more"}, format="json")
    assert error_of(late, 409) == {
        "code": "invalid_state",
        "message": "Cannot reply: the ticket is closed.",
        "details": {"status": "closed", "allowed_statuses": []},
        "request_id": late.json()["error"]["request_id"],
    }
    assert error_of(owner_api.post(f"{path}/rate", {"rating": 9}, format="json"), 400)


def test_the_list_filters_and_searches(owner_api, account, technical, billing_department):
    server = ServerFactory(account=account)
    lag = open_one(owner_api, technical, subject="Lag spikes", server=server.id)
    invoice = open_one(owner_api, billing_department, subject="Invoice question", priority="low")
    number = Ticket.objects.get(pk=invoice["id"]).number

    def ids(**params):
        return listed(owner_api.get("/v1/tickets", params), "tickets")

    assert ids(search="lag") == [lag["id"]]
    assert ids(search=f"#{number}") == [invoice["id"]]
    assert ids(department=billing_department.id) == [invoice["id"]]
    assert ids(server=server.id) == [lag["id"]]
    assert ids(priority="low") == [invoice["id"]]
    assert ids(status="open,closed") == [invoice["id"], lag["id"]]
    bad = owner_api.get("/v1/tickets", {"status": "sleeping"})
    assert error_of(bad, 400)["code"] == "invalid_parameter"


def test_departments_lists_those_shown_to_customers(owner_api, technical, billing_department):
    billing_department.customer_visible = False
    billing_department.save()
    assert listed(owner_api.get("/v1/departments"), "departments") == [technical.id]
    body = {"subject": "x", "body": "y", "department": billing_department.id}
    hidden = owner_api.post("/v1/tickets", body, format="json")
    assert error_of(hidden, 400)["details"]["fields"][0]["name"] == "department"


PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64


def upload(name: str, content: bytes, content_type: str = "application/octet-stream"):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, content, content_type=content_type)


def test_a_reply_carries_files_and_only_the_account_downloads_them(
    owner_api, outsider_api, technical
):
    ticket = open_one(owner_api, technical)

    answer = owner_api.post(
        f"/v1/tickets/{ticket['id']}/attachments",
        {
            "file": [upload("latest.log", b"[ERROR] bind failed\n"), upload("shot.png", PNG)],
            "body": "Logs and a screenshot.",
        },
        format="multipart",
    )

    message = data_of(answer, 201)["message"]
    assert message["body"] == "Logs and a screenshot."
    files = {each["filename"]: each for each in message["attachments"]}
    assert set(files) == {"latest.log", "shot.png"}
    assert files["shot.png"]["content_type"] == "image/png" and files["shot.png"]["size"] == 72
    download = owner_api.get(f"/v1/attachments/{files['latest.log']['id']}")
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == b"[ERROR] bind failed\n"
    assert download["Content-Disposition"] == 'attachment; filename="latest.log"'
    assert download["X-Content-Type-Options"] == "nosniff"
    stranger = outsider_api.get(f"/v1/attachments/{files['latest.log']['id']}")
    assert error_of(stranger, 404)["code"] == "not_found"


def test_files_are_checked_before_any_is_kept(owner_api, technical, settings):
    from support.models import Attachment, Message

    settings.SUPPORT_ATTACHMENT_MAX_BYTES = 1024
    ticket = open_one(owner_api, technical)
    path = f"/v1/tickets/{ticket['id']}/attachments"
    cases = [
        ([upload("ok.txt", b"fine"), upload("tool.exe", b"MZ" + b"\0" * 10)], "type_not_allowed"),
        ([upload("logs.txt", PNG)], "type_mismatch"),
        ([upload("big.log", b"x" * 2048)], "too_large"),
        ([upload("../../etc/passwd.txt", b"x" * 2048)], "too_large"),
    ]
    for files, code in cases:
        error = error_of(owner_api.post(path, {"file": files}, format="multipart"), 400)
        assert error["details"]["fields"][0]["code"] == code
    assert "passwd.txt is larger than" in error["message"] and "../" not in error["message"]
    none = owner_api.post(path, {"body": "no file"}, format="multipart")
    assert error_of(none, 400)["details"]["fields"][0]["name"] == "file"
    assert not Attachment.objects.exists()
    assert Message.objects.filter(ticket_id=ticket["id"]).count() == 1


def test_an_internal_note_s_file_is_never_served_to_the_customer(
    owner_api, account, technical, agent
):
    from support.models import Ticket
    from support.services.attachments import Upload

    ticket = open_one(owner_api, technical)
    note = ticket_reply(
        ticket=Ticket.objects.get(pk=ticket["id"]),
        body="Abuse report",
        actor=Actor(user=agent),
        by_staff=True,
        channel="web",
        internal=True,
        uploads=[Upload("report.txt", b"private")],
    )
    [attachment] = note.attachments.all()

    assert error_of(owner_api.get(f"/v1/attachments/{attachment.id}"), 404)["code"] == "not_found"
