"""The customers' Support pages: the ticket list, opening a ticket (about a server or bot, with
files), the conversation (never an internal note) with its attachments, replying, closing,
reopening and rating; and who may see and do what."""

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from accounts.actors import SYSTEM, Actor
from accounts.roles import ROLE_SCOPES, Role
from accounts.services import account_suspend
from servers.models import Bot
from support.models import Attachment, Message, Ticket
from support.services.attachments import Upload
from support.services.tickets import Requester, ticket_open, ticket_reply, ticket_status_change
from tests.dashboard import field_errors, html_id_text, messages_of, signed_in
from tests.factories import MembershipFactory, ServerFactory

pytestmark = pytest.mark.django_db
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
PROGRAM = b"MZ\x90\x00" + b"\0" * 60  # a Windows program's first bytes
SUSPENDED = "This account is suspended, so its data cannot be changed."
VIEWER_REFUSED = "As Viewer, you may not open, answer and close support tickets."


def open_ticket(user, account, department, subject="Server stops at 'Loading world'", **kwargs):
    ticket, _ = ticket_open(
        requester=Requester(email=user.email, name=user.name, user=user, account=account),
        subject=subject,
        body=kwargs.pop("body", "Since the update."),
        department=department,
        channel="api",
        actor=Actor(user=user),
        **kwargs,
    )
    return ticket


def staff_reply(ticket, agent, body="Fixed: try again.", **kwargs) -> Message:
    return ticket_reply(
        ticket=ticket, body=body, actor=Actor(user=agent), by_staff=True, channel="web", **kwargs
    )


def upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


def ticket_url(ticket, suffix: str = "") -> str:
    return f"/support/{ticket.id}{suffix}"


def listed(response) -> list[str]:
    return [ticket.id for ticket in response.context["tickets"]]


def stored_files(settings) -> list[Path]:
    return [path for path in Path(settings.MEDIA_ROOT).rglob("*") if path.is_file()]


@pytest.fixture
def viewer(account):
    return MembershipFactory(account=account, role=Role.VIEWER).user


@pytest.fixture
def ticket(owner, account, technical):
    return open_ticket(owner, account, technical)


# --- The list --------------------------------------------------------------------------------


def test_support_is_in_the_navigation(owner):
    body = signed_in(owner).get("/support").content.decode()
    assert '<a href="/support" aria-current="page">Support</a>' in body


def test_the_list_shows_the_account_s_tickets_to_its_members_only(
    owner, teammate, outsider, account, other_account, technical
):
    ours = open_ticket(owner, account, technical, priority="high")
    theirs = open_ticket(outsider, other_account, technical, subject="Their lag")

    response = signed_in(teammate).get("/support")

    assert response.status_code == 200
    assert listed(response) == [ours.id]
    row = html_id_text(response, f"ticket-{ours.id}")
    for shown in [f"#{ours.number}", "Loading world", "Open", "High", "Technical"]:
        assert shown in row
    assert f'href="/support/{ours.id}"' in row
    assert listed(signed_in(outsider).get("/support")) == [theirs.id]


def test_the_list_finds_by_number_or_subject_and_filters(
    owner, account, technical, billing_department
):
    lag = open_ticket(owner, account, technical, subject="Lag spikes", priority="urgent")
    invoice = open_ticket(owner, account, billing_department, subject="Invoice address")
    ticket_status_change(ticket=invoice, status="closed", actor=SYSTEM, by_staff=True)
    client = signed_in(owner)

    assert listed(client.get("/support", {"q": f"#{lag.number}"})) == [lag.id]
    assert listed(client.get("/support", {"q": str(invoice.number)})) == [invoice.id]
    assert listed(client.get("/support", {"q": "spikes"})) == [lag.id]
    assert listed(client.get("/support", {"status": "closed"})) == [invoice.id]
    assert listed(client.get("/support", {"priority": "urgent"})) == [lag.id]
    assert listed(client.get("/support", {"department": technical.id})) == [lag.id]
    nothing = client.get("/support", {"q": "refund"})
    assert "No ticket matches this search or these filters." in nothing.content.decode()
    bad = client.get("/support", {"status": "lost"})
    assert listed(bad) == [invoice.id, lag.id]  # the invoice was updated last
    assert bad.context["listing"].notices[0].startswith("The status filter was left out")


def test_the_list_sorts_by_number_or_last_update(owner, account, technical):
    first = open_ticket(owner, account, technical)
    second = open_ticket(owner, account, technical)
    ticket_reply(ticket=first, body="More", actor=Actor(user=owner), by_staff=False, channel="web")
    client = signed_in(owner)
    assert listed(client.get("/support")) == [first.id, second.id]
    assert listed(client.get("/support", {"sort": "number"})) == [first.id, second.id]
    assert listed(client.get("/support", {"sort": "-number"})) == [second.id, first.id]


def test_the_list_pages_with_bounded_queries(
    owner, account, technical, django_assert_max_num_queries
):
    for _ in range(3):
        open_ticket(owner, account, technical)
    client = signed_in(owner)
    # The session, the user, the membership, the count, the rows (with their department), the
    # account (its name), the department menu.
    with django_assert_max_num_queries(7) as few:
        client.get("/support")
    baseline = len(few.captured_queries)
    for _ in range(27):
        open_ticket(owner, account, technical)
    with django_assert_max_num_queries(baseline):
        first = client.get("/support")
    assert len(listed(first)) == 25
    assert 'href="?page=2"' in first.content.decode()
    assert len(listed(client.get("/support", {"page": 2}))) == 5


# --- Opening a ticket ------------------------------------------------------------------------


def test_opening_a_ticket_about_a_server_with_files(owner, account, technical, settings):
    server = ServerFactory(account=account, name="Survival")
    client = signed_in(owner)
    form = client.get("/support/new").content.decode()
    assert f'<option value="{server.id}">Survival</option>' in form
    assert 'type="file" name="attachments" multiple' in form

    response = client.post(
        "/support/new",
        {
            "department": technical.id,
            "subject": "Lag spikes",
            "body": "Every evening.",
            "priority": "high",
            "about": server.id,
            "attachments": [
                upload("latest.log", b"[WARN] tick took 900 ms\n"),
                upload("shot.png", PNG),
            ],
        },
        follow=True,
    )

    ticket = Ticket.objects.get()
    assert response.redirect_chain == [(ticket_url(ticket), 302)]
    assert messages_of(response) == [
        f"Ticket #{ticket.number} is open: our answer will show on this page."
    ]
    assert (ticket.channel, ticket.priority, ticket.server, ticket.requester) == (
        "web",
        "high",
        server,
        owner,
    )
    message = ticket.messages.get()
    assert message.body == "Every evening."
    assert sorted(message.attachments.values_list("filename", flat=True)) == [
        "latest.log",
        "shot.png",
    ]
    assert len(stored_files(settings)) == 2
    assert "shot.png" in response.content.decode()


def test_opening_a_ticket_about_a_bot(owner, account, technical):
    bot = Bot.objects.create(
        account=account,
        name="Moderator",
        region_id="eu-west",
        runtime="python-3.13",
        start_command="python bot.py",
        token_encrypted="x",
        token_last4="abcd",
    )
    response = signed_in(owner).post(
        "/support/new",
        {
            "department": technical.id,
            "subject": "Bot offline",
            "body": "Since noon.",
            "about": bot.id,
        },
    )
    assert response.status_code == 302
    ticket = Ticket.objects.get()
    assert (ticket.bot, ticket.server, ticket.priority) == (bot, None, "normal")


def test_a_server_of_another_account_is_refused(owner, other_account, technical):
    theirs = ServerFactory(account=other_account)
    response = signed_in(owner).post(
        "/support/new",
        {"department": technical.id, "subject": "Lag", "body": "Help", "about": theirs.id},
    )
    assert response.status_code == 200
    assert field_errors(response, "about") == [
        f"Select a valid choice. {theirs.id} is not one of the available choices."
    ]
    assert response.context["form"]["subject"].value() == "Lag"  # what was typed is kept
    assert not Ticket.objects.exists()


def test_only_departments_customers_may_pick_are_offered(owner, technical, billing_department):
    billing_department.customer_visible = False
    billing_department.save()
    client = signed_in(owner)
    assert billing_department.id not in client.get("/support/new").content.decode()
    response = client.post(
        "/support/new",
        {"department": billing_department.id, "subject": "Refund", "body": "Please."},
    )
    assert field_errors(response, "department")
    assert not Ticket.objects.exists()


@pytest.mark.parametrize(
    ("file", "error"),
    [
        (("notes.txt", PROGRAM), "notes.txt is not the kind of file its name says."),
        (
            ("tool.exe", PROGRAM),
            "tool.exe: only images, PDF, text, logs and archives can be attached.",
        ),
        (("big.log", b"x" * 2048), "big.log is larger than 0.000976562 MB."),
    ],
)
@override_settings(SUPPORT_ATTACHMENT_MAX_BYTES=1024)
def test_a_bad_attachment_is_refused_and_nothing_is_written(
    owner, technical, settings, file, error
):
    response = signed_in(owner).post(
        "/support/new",
        {
            "department": technical.id,
            "subject": "Crash",
            "body": "See the file.",
            "attachments": [upload("fine.txt", b"ok"), upload(*file)],
        },
    )
    assert response.status_code == 200
    assert field_errors(response, "attachments") == [error]
    assert not Ticket.objects.exists() and not Attachment.objects.exists()
    assert stored_files(settings) == []


@override_settings(SUPPORT_ATTACHMENTS_PER_MESSAGE=1)
def test_too_many_attachments_are_refused(owner, technical, settings):
    response = signed_in(owner).post(
        "/support/new",
        {
            "department": technical.id,
            "subject": "Crash",
            "body": "See the files.",
            "attachments": [upload("a.txt", b"a"), upload("b.txt", b"b")],
        },
    )
    assert field_errors(response, "attachments") == ["At most 1 files per message."]
    assert not Ticket.objects.exists() and stored_files(settings) == []


# --- The conversation ------------------------------------------------------------------------


def test_the_conversation_shows_replies_and_files_never_internal_notes(
    owner, teammate, ticket, agent
):
    staff_reply(ticket, agent, body="Please send the log.", uploads=[Upload("howto.txt", b"hi")])
    note = staff_reply(
        ticket,
        agent,
        body="Customer is on the old plan; secret lead.",
        internal=True,
        uploads=[Upload("internal.txt", b"private")],
    )
    [hidden] = note.attachments.all()

    response = signed_in(teammate).get(ticket_url(ticket))

    body = response.content.decode()
    assert response.status_code == 200
    assert "Since the update." in body and "Please send the log." in body
    assert "Support team" in body and agent.email not in body
    assert "secret lead" not in body and "internal.txt" not in body and hidden.id not in body
    [shown] = Attachment.objects.filter(filename="howto.txt")
    assert f'href="/support/attachments/{shown.id}"' in body
    assert signed_in(owner).get(f"/support/attachments/{hidden.id}").status_code == 404


def test_attachments_download_for_the_account_only(owner, teammate, outsider, ticket, agent):
    message = staff_reply(ticket, agent, uploads=[Upload("latest.log", b"[ERROR] bind\n")])
    [attachment] = message.attachments.all()
    url = f"/support/attachments/{attachment.id}"

    for user in (owner, teammate):
        response = signed_in(user).get(url)
        assert response.status_code == 200
        assert b"".join(response.streaming_content) == b"[ERROR] bind\n"
        assert response["Content-Disposition"] == 'attachment; filename="latest.log"'
        assert response["X-Content-Type-Options"] == "nosniff"
        assert {"private", "no-store"} <= set(response["Cache-Control"].split(", "))
    assert signed_in(outsider).get(url).status_code == 404


def test_an_outsider_gets_404_for_every_page_of_the_ticket(outsider, ticket):
    client = signed_in(outsider)
    assert client.get(ticket_url(ticket)).status_code == 404
    for suffix in ["", "/close", "/reopen", "/rate"]:
        assert client.post(ticket_url(ticket, suffix), {"body": "hi"}).status_code == 404
    ticket.refresh_from_db()
    assert ticket.status == "open" and ticket.messages.count() == 1


def test_replying_with_a_file_hands_the_ticket_back_to_staff(owner, ticket, agent, settings):
    staff_reply(ticket, agent)
    client = signed_in(owner)

    response = client.post(
        ticket_url(ticket),
        {"body": "Still broken.", "attachments": [upload("crash.txt", b"trace")]},
        follow=True,
    )

    assert response.redirect_chain == [(ticket_url(ticket), 302)]
    assert messages_of(response) == ["Your reply is sent."]
    ticket.refresh_from_db()
    assert ticket.status == "pending_staff"
    reply = ticket.messages.latest("created_at")
    assert (reply.body, reply.author, reply.channel) == ("Still broken.", owner, "web")
    assert [each.filename for each in reply.attachments.all()] == ["crash.txt"]


def test_an_empty_reply_is_refused_next_to_the_message(owner, ticket):
    response = signed_in(owner).post(ticket_url(ticket), {"body": "  "})
    assert response.status_code == 200
    assert response.context["reply_form"].errors["body"] == ["This field is required."]
    assert ticket.messages.count() == 1


def test_close_then_no_reply_form_and_a_late_reply_is_refused(owner, ticket):
    client = signed_in(owner)
    response = client.post(ticket_url(ticket, "/close"), follow=True)
    assert messages_of(response) == [f"Ticket #{ticket.number} is closed."]
    ticket.refresh_from_db()
    assert ticket.status == "closed"
    body = response.content.decode()
    assert 'id="ticket-reply"' not in body and 'id="close-ticket"' not in body
    assert "Status: Closed." in body  # the system entry

    late = client.post(ticket_url(ticket), {"body": "One more thing"})
    assert late.context["reply_form"].non_field_errors() == ["Cannot reply: the ticket is closed."]
    assert ticket.messages.filter(kind="public").count() == 1


def test_a_resolved_ticket_reopens_and_a_closed_one_does_not(owner, ticket):
    ticket_status_change(ticket=ticket, status="resolved", actor=SYSTEM, by_staff=True)
    client = signed_in(owner)
    assert 'id="reopen-ticket"' in client.get(ticket_url(ticket)).content.decode()

    response = client.post(ticket_url(ticket, "/reopen"), follow=True)
    assert messages_of(response) == [f"Ticket #{ticket.number} is open again."]
    ticket.refresh_from_db()
    assert ticket.status == "open"

    ticket_status_change(ticket=ticket, status="closed", actor=SYSTEM, by_staff=True)
    response = client.post(ticket_url(ticket, "/reopen"), follow=True)
    assert messages_of(response) == ["Cannot reopen it: the ticket is closed."]
    ticket.refresh_from_db()
    assert ticket.status == "closed"


def test_a_finished_ticket_is_rated_once(owner, ticket):
    client = signed_in(owner)
    assert 'id="ticket-rate"' not in client.get(ticket_url(ticket)).content.decode()
    ticket_status_change(ticket=ticket, status="resolved", actor=SYSTEM, by_staff=True)
    assert 'id="ticket-rate"' in client.get(ticket_url(ticket)).content.decode()

    wrong = client.post(ticket_url(ticket, "/rate"), {"rating": "7", "comment": "Great"})
    assert wrong.status_code == 200
    assert wrong.context["rate_form"].errors["rating"]
    assert "Great</textarea>" in wrong.content.decode()  # what was typed is kept

    response = client.post(
        ticket_url(ticket, "/rate"), {"rating": "5", "comment": "Quick and kind."}, follow=True
    )
    assert messages_of(response) == ["Thank you for rating this ticket."]
    ticket.refresh_from_db()
    assert (ticket.rating, ticket.rating_comment) == (5, "Quick and kind.")
    assert 'id="ticket-rate"' not in response.content.decode()
    assert html_id_text(response, "ticket-rating") == "5 of 5 · Quick and kind."


def test_rating_an_unfinished_ticket_is_refused(owner, ticket):
    response = signed_in(owner).post(ticket_url(ticket, "/rate"), {"rating": "4"})
    assert response.context["rate_form"].non_field_errors() == [
        "Cannot rate it before it is resolved: the ticket is open."
    ]
    ticket.refresh_from_db()
    assert ticket.rating is None


# --- Who may see and do what ------------------------------------------------------------------


def test_a_role_without_tickets_read_is_told_its_role_does_not_open_it_and_no_navigation_entry(
    viewer, ticket, monkeypatch
):
    # Every role reads tickets today; the rule holds for one that would not.
    monkeypatch.setitem(ROLE_SCOPES, Role.VIEWER, ROLE_SCOPES[Role.VIEWER] - {"tickets:read"})
    message = Message.objects.get(ticket=ticket)
    [attachment] = ticket_reply(
        ticket=ticket,
        body="Log",
        actor=SYSTEM,
        by_staff=True,
        channel="web",
        uploads=[Upload("a.txt", b"a")],
    ).attachments.all()
    client = signed_in(viewer)
    for path in [
        "/support",
        "/support/new",
        ticket_url(ticket),
        f"/support/attachments/{attachment.id}",
    ]:
        assert client.get(path).status_code == 403, path
    assert client.post(ticket_url(ticket, "/close")).status_code == 403
    assert 'href="/support"' not in client.get("/").content.decode()
    assert Message.objects.filter(ticket=ticket).exclude(pk=message.pk).count() == 1


def test_a_viewer_reads_but_cannot_write(viewer, ticket):
    client = signed_in(viewer)
    body = client.get(ticket_url(ticket)).content.decode() + client.get("/support").content.decode()
    assert "Loading world" in body
    for absent in ['id="ticket-reply"', 'id="close-ticket"', 'id="new-ticket"']:
        assert absent not in body
    response = client.get("/support/new", follow=True)
    assert messages_of(response) == [VIEWER_REFUSED]
    for suffix in ["", "/close"]:
        response = client.post(ticket_url(ticket, suffix), {"body": "hi"}, follow=True)
        assert response.redirect_chain == [(ticket_url(ticket), 302)]
        assert messages_of(response) == [VIEWER_REFUSED]
    ticket.refresh_from_db()
    assert ticket.status == "open" and ticket.messages.count() == 1


def test_a_suspended_account_reads_its_tickets_but_cannot_post(owner, account, ticket, technical):
    account_suspend(account=account, reason="Terms of service", actor=SYSTEM)
    client = signed_in(owner)
    body = client.get(ticket_url(ticket)).content.decode()
    assert "This account is suspended" in body and "Loading world" in body
    assert 'id="ticket-reply"' not in body and 'id="close-ticket"' not in body
    assert client.get("/support/new").status_code == 302
    posts = [
        ("/support/new", {"department": technical.id, "subject": "x", "body": "y"}),
        (ticket_url(ticket), {"body": "hi"}),
        (ticket_url(ticket, "/close"), {}),
    ]
    for path, data in posts:
        response = client.post(path, data, follow=True)
        assert messages_of(response) == [SUSPENDED], path
    assert Ticket.objects.count() == 1
    ticket.refresh_from_db()
    assert ticket.status == "open" and ticket.messages.count() == 1
