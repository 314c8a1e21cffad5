"""Mail into the desk with real messages (tests/support/mail/*.eml): new tickets by department
address (guests included), replies threaded by the signed Reply-To token or by In-Reply-To,
quoted history stripped, attachments kept or refused by name, and what is refused outright:
auto-replies, bounces, duplicates, floods and strangers. Also the pipe command."""

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from accounts.actors import Actor
from support.models import Attachment, Message, Ticket
from support.services.mail import mail_receive
from support.services.notifications import reply_address, reply_token
from support.services.tickets import ticket_close, ticket_reply
from tests.factories import MembershipFactory, UserFactory
from tests.support.test_tickets import open_ticket

pytestmark = pytest.mark.django_db
MAIL = Path(__file__).parent / "mail"


def eml(name: str, **replace: str) -> bytes:
    raw = (MAIL / f"{name}.eml").read_bytes()
    for old, new in replace.items():
        raw = raw.replace(old.encode(), new.encode())
    return raw


@pytest.fixture(autouse=True)
def desk(settings, technical, billing_department):
    settings.SUPPORT_REPLY_ADDRESS = "support@desk.example"


def test_mail_to_a_department_opens_a_guest_ticket(billing_department):
    outcome = mail_receive(eml("new_plain"))

    assert outcome.result == "opened"
    ticket = outcome.ticket
    assert (ticket.department, ticket.account, ticket.requester) == (billing_department, None, None)
    assert ticket.requester_email == "anna.schmidt@example.com"
    assert (ticket.subject, ticket.channel) == ("Invoice 2026-0042 charged twice", "email")
    message = Message.objects.get(ticket=ticket)
    assert message.email_message_id == "7d1c0a4e-3b2f-4c19-9e55-0f3c2a9b8d11@example.com"


def test_mail_from_a_customer_opens_a_ticket_of_their_account(
    account, billing_department, settings
):
    user = UserFactory(email="anna.schmidt@example.com")
    MembershipFactory(account=account, user=user)
    # Only authenticated mail acts as a user (issue 28: tests/support/test_hardening_mail_*).
    settings.SUPPORT_MAIL_TRUSTED_AUTHSERV_IDS = ["mx.desk.example"]
    verdict = b"Authentication-Results: mx.desk.example; dmarc=pass header.from=example.com\n"

    ticket = mail_receive(verdict + eml("new_plain")).ticket

    assert (ticket.account, ticket.requester) == (account, user)


def test_a_reply_to_the_signed_address_threads_without_its_quotes(owner, account, technical):
    ticket = open_ticket(owner, account, technical)
    Ticket.objects.filter(pk=ticket.pk).update(requester_email="sam@pixelforge.example")
    raw = eml("plus_reply", **{"support+AbC123xyz@desk.example": reply_address(ticket)})

    outcome = mail_receive(raw)

    assert (outcome.result, outcome.ticket) == ("replied", ticket)
    body = outcome.message.body
    assert ">" not in body and "wrote:" not in body
    assert Ticket.objects.get(pk=ticket.pk).status == "open"
    forged = eml(
        "plus_reply",
        **{
            "support+AbC123xyz@desk.example": (
                f"support+{ticket.number}-0000000000deadbeef00@desk.example"
            ),
            "5e6f7a8b": "5e6f7a8c",
        },
    )
    assert mail_receive(forged).result == "refused"  # no ticket, no department at that address


def test_a_reply_threads_by_in_reply_to(owner, account, technical, agent):
    ticket = open_ticket(owner, account, technical)
    Ticket.objects.filter(pk=ticket.pk).update(requester_email="marco.rossi.hosting@gmail.com")
    ticket_reply(
        ticket=ticket,
        body="Try a restart.",
        actor=Actor(user=agent),
        by_staff=True,
        channel="web",
        email_message_id="ticket-1042.1772520000@desk.example",
    )

    outcome = mail_receive(eml("gmail_reply"))

    assert (outcome.result, outcome.ticket) == ("replied", ticket)
    assert "Failed to bind to port 25565" in outcome.message.body
    assert "Hello Marco" not in outcome.message.body
    assert Ticket.objects.get(pk=ticket.pk).status == "pending_staff"


def test_a_stranger_cannot_reply_on_a_ticket(owner, account, technical):
    ticket = open_ticket(owner, account, technical)
    raw = eml("plus_reply", **{"support+AbC123xyz@desk.example": reply_address(ticket)})

    outcome = mail_receive(raw)

    assert (outcome.result, outcome.reason) == ("refused", "the sender is not part of this ticket")
    assert Message.objects.filter(ticket=ticket).count() == 1


def test_a_reply_to_a_closed_ticket_opens_a_follow_up(owner, account, technical):
    ticket = open_ticket(owner, account, technical)
    Ticket.objects.filter(pk=ticket.pk).update(requester_email="sam@pixelforge.example")
    ticket_close(ticket=ticket, actor=Actor(user=owner))
    raw = eml("plus_reply", **{"support+AbC123xyz@desk.example": reply_address(ticket)})

    outcome = mail_receive(raw)

    assert outcome.result == "opened" and outcome.ticket.pk != ticket.pk
    assert outcome.ticket.department == technical


@pytest.mark.parametrize("name", ["out_of_office", "bounce"])
def test_automatic_mail_is_dropped(name):
    outcome = mail_receive(eml(name))

    assert outcome.result == "refused" and outcome.reason.startswith("automatic mail")
    assert not Ticket.objects.exists() and not Message.objects.exists()


def test_a_message_over_the_size_limit_is_dropped_unread(settings):
    settings.SUPPORT_MAIL_MAX_BYTES = 1024
    outcome = mail_receive(eml("attachments"))
    assert (outcome.result, outcome.reason) == ("refused", "the message is too large")
    assert not Ticket.objects.exists()


def test_the_same_message_twice_is_one_ticket():
    first = mail_receive(eml("new_plain"))
    again = mail_receive(eml("new_plain"))

    assert (first.result, again.result, again.reason) == ("opened", "refused", "already received")
    assert Ticket.objects.count() == 1


def test_a_flood_from_one_sender_is_cut_off(settings):
    settings.SUPPORT_MAIL_PER_SENDER_PER_HOUR = 2
    results = [
        mail_receive(eml("new_plain", **{"7d1c0a4e": f"7d1c0a4{n}"})).result for n in range(3)
    ]
    assert results == ["opened", "opened", "refused"]


def test_attachments_are_kept_and_hostile_ones_refused_on_the_message():
    outcome = mail_receive(eml("attachments"))
    kept = Attachment.objects.filter(message=outcome.message).order_by("filename")
    assert [(each.filename, each.content_type) for each in kept] == [
        ("invoice-2026-0042.pdf", "application/pdf"),
        ("panel.png", "image/png"),
    ]
    assert all(each.size == len(each.file.read()) for each in kept)

    hostile = mail_receive(eml("hostile_filename"))

    assert hostile.result == "opened"  # the message is kept, its files are not
    assert not Attachment.objects.filter(message=hostile.message).exists()
    body = Message.objects.get(pk=hostile.message.pk).body
    assert "[Attachments not kept]" in body and "passwd" in body and "x.exe" in body


def test_non_ascii_and_html_only_mail_read_as_text(sales):
    german = mail_receive(eml("non_ascii"))
    html = mail_receive(eml("html_only"))

    assert german.ticket.subject.startswith("Rechnung für Bestellung")
    body = Message.objects.get(ticket=html.ticket).body
    assert "<p" not in body and "<br" not in body and "EUR 200" in body


def test_the_pipe_command_takes_one_message_from_standard_input(monkeypatch):
    stdin = io.TextIOWrapper(io.BytesIO(eml("new_plain")))
    monkeypatch.setattr("sys.stdin", stdin)
    out = io.StringIO()

    call_command("ticket_mail_in", stdout=out)

    ticket = Ticket.objects.get()
    assert out.getvalue().strip() == f"opened #{ticket.number}"


def test_a_token_is_bound_to_its_ticket(owner, account, technical):
    first, second = open_ticket(owner, account, technical), open_ticket(owner, account, technical)
    assert reply_token(first) != reply_token(second)
    assert reply_token(first).startswith(f"{first.number}-")
