"""Issue 28: a From header is a claim, not an identity. Mail acts as staff, or as a customer
inside their account, only when a trusted mail server's Authentication-Results header says
DMARC passed for the From domain; otherwise it is that address's message and nothing more."""

import pytest
from django.core import mail

from events.models import Event
from support.mail_in import parse_message
from support.models import Message, Ticket
from support.services.mail import mail_receive
from support.services.notifications import reply_address
from tests.factories import MembershipFactory, UserFactory
from tests.support.test_mail_out import send_desk_mail
from tests.support.test_tickets import open_ticket

pytestmark = pytest.mark.django_db
OUR_MTA = "mx.desk.example"


@pytest.fixture(autouse=True)
def desk(settings):
    settings.SUPPORT_REPLY_ADDRESS = "support@desk.example"


def raw_mail(*, sender: str, to: str, verdicts: tuple[str, ...] = (), number: int = 1) -> bytes:
    """A plain message from ``sender`` with the Authentication-Results headers given, topmost
    first."""
    headers = "".join(f"Authentication-Results: {each}\r\n" for each in verdicts)
    return (
        f"{headers}From: {sender}\r\nTo: {to}\r\nSubject: Re: help\r\n"
        f"Message-ID: <hardening-{number}@mail.example>\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n\r\nPlease refund everything.\r\n"
    ).encode()


def dmarc_pass(domain: str, authserv_id: str = OUR_MTA) -> str:
    return f"{authserv_id}; spf=pass smtp.mailfrom={domain}; dmarc=pass header.from={domain}"


def test_a_customer_writing_as_staff_to_their_ticket_gets_no_staff_voice(
    owner, account, technical, agent
):
    ticket = open_ticket(owner, account, technical)
    send_desk_mail()
    mail.outbox.clear()

    outcome = mail_receive(raw_mail(sender=agent.email, to=reply_address(ticket)))

    assert (outcome.result, outcome.reason) == ("refused", "the sender is not part of this ticket")
    assert not Message.objects.filter(ticket=ticket, from_staff=True).exists()
    assert send_desk_mail() == []  # nothing mailed out from the support address


def test_a_staff_reply_counts_only_with_a_trusted_dmarc_pass(
    owner, account, technical, agent, settings
):
    ticket = open_ticket(owner, account, technical)
    domain = agent.email.rpartition("@")[2]
    genuine = raw_mail(sender=agent.email, to=reply_address(ticket), verdicts=(dmarc_pass(domain),))

    # Nothing is trusted by default: the same message is nobody's.
    assert mail_receive(genuine).result == "refused"

    settings.SUPPORT_MAIL_TRUSTED_AUTHSERV_IDS = [OUR_MTA]
    outcome = mail_receive(genuine)

    assert outcome.result == "replied"
    message = Message.objects.get(pk=outcome.message.pk)
    assert (message.from_staff, message.author) == (True, agent)
    assert Ticket.objects.get(pk=ticket.pk).status == "pending_customer"


@pytest.mark.parametrize(
    "verdicts",
    [
        # Another server's word, however good it sounds.
        (dmarc_pass("hosting.example", "mx.attacker.example"),),
        # Ours failed it; a forged "pass" of our id further down is not read.
        (f"{OUR_MTA}; dmarc=fail header.from=hosting.example", dmarc_pass("hosting.example")),
        # A pass for another domain than the From address's.
        (dmarc_pass("attacker.example"),),
        # SPF or DKIM alone say nothing about the From address.
        (f"{OUR_MTA}; spf=pass smtp.mailfrom=hosting.example; dkim=pass header.d=x.example",),
        (f"{OUR_MTA}; dmarc=none header.from=hosting.example",),
        # Unreadable.
        (f"{OUR_MTA}; dmarc=pass header.from=hosting.example (((",),
    ],
)
def test_staff_mail_without_a_trusted_aligned_pass_is_refused(
    owner, account, technical, agent, settings, verdicts
):
    settings.SUPPORT_MAIL_TRUSTED_AUTHSERV_IDS = [OUR_MTA]
    ticket = open_ticket(owner, account, technical)
    raw = raw_mail(sender=agent.email, to=reply_address(ticket), verdicts=verdicts)

    assert mail_receive(raw).result == "refused"
    assert not Message.objects.filter(ticket=ticket, from_staff=True).exists()


def test_two_from_addresses_are_never_authenticated(settings):
    raw = (
        f"Authentication-Results: {dmarc_pass('hosting.example')}\r\n"
        "From: agent@hosting.example, someone@attacker.example\r\nTo: x@desk.example\r\n\r\nhi\r\n"
    ).encode()

    mail = parse_message(raw, trusted_authserv_ids=[OUR_MTA])

    assert not mail.sender_authenticated


def test_a_providers_nonstandard_header_still_gives_its_dmarc_result():
    # Amazon SES writes properties RFC 8601 does not allow; its dmarc result still reads.
    ses = (
        "amazonses.com; spf=pass (spfCheck: domain of hosting.example designates 192.0.2.1 "
        "as permitted sender) client-ip=192.0.2.1; envelope-from=a@hosting.example; "
        "helo=mail.hosting.example; dkim=pass header.i=@hosting.example; "
        "dmarc=pass header.from=hosting.example;"
    )
    raw = raw_mail(sender="agent@hosting.example", to="x@desk.example", verdicts=(ses,))

    assert parse_message(raw, trusted_authserv_ids=["amazonses.com"]).sender_authenticated
    assert not parse_message(raw, trusted_authserv_ids=[OUR_MTA]).sender_authenticated


def test_unauthenticated_mail_from_a_customer_opens_only_a_guest_ticket(
    account, billing_department
):
    user = UserFactory(email="mia@blockworks.example")
    MembershipFactory(account=account, user=user)

    outcome = mail_receive(raw_mail(sender=user.email, to=billing_department.email))

    ticket = outcome.ticket
    assert (outcome.result, ticket.account, ticket.requester) == ("opened", None, None)
    assert ticket.requester_email == user.email
    assert not Event.objects.filter(account=account).exists()  # nothing in the account


def test_authenticated_mail_from_a_customer_opens_a_ticket_of_their_account(
    account, billing_department, settings
):
    settings.SUPPORT_MAIL_TRUSTED_AUTHSERV_IDS = [OUR_MTA]
    user = UserFactory(email="mia@blockworks.example")
    MembershipFactory(account=account, user=user)
    raw = raw_mail(
        sender=user.email, to=billing_department.email, verdicts=(dmarc_pass("blockworks.example"),)
    )

    ticket = mail_receive(raw).ticket

    assert (ticket.account, ticket.requester) == (account, user)


def test_an_unauthenticated_reply_from_the_requesters_address_is_theirs_as_an_address(
    owner, account, technical
):
    ticket = open_ticket(owner, account, technical)

    outcome = mail_receive(raw_mail(sender=owner.email, to=reply_address(ticket)))

    assert outcome.result == "replied"
    message = Message.objects.get(pk=outcome.message.pk)
    assert (message.author, message.author_email, message.from_staff) == (None, owner.email, False)
    event = Event.objects.get(type="ticket.replied")
    assert event.actor_user is None  # not recorded as the user's own doing


def test_an_unauthenticated_teammate_not_on_the_ticket_cannot_reply(
    owner, teammate, account, technical
):
    ticket = open_ticket(owner, account, technical)

    outcome = mail_receive(raw_mail(sender=teammate.email, to=reply_address(ticket)))

    assert outcome.result == "refused"
    assert Message.objects.filter(ticket=ticket).count() == 1


def test_staff_notices_offer_a_mail_answer_only_when_the_desk_can_check_it(
    owner, account, technical, agent, settings
):
    open_ticket(owner, account, technical)
    (notice,) = [each for each in send_desk_mail() if agent.email in each.to]
    assert "reply to this e-mail" not in notice.body

    mail.outbox.clear()
    settings.SUPPORT_MAIL_TRUSTED_AUTHSERV_IDS = [OUR_MTA]
    open_ticket(owner, account, technical)
    (notice,) = [each for each in send_desk_mail() if agent.email in each.to]
    assert "reply to this e-mail" in notice.body


def test_a_mail_longer_than_a_message_holds_is_kept_shortened(
    owner, account, technical, billing_department
):
    text = "A very long log line.\n" * 5000  # 110,000 characters
    raw = (
        "From: anna@example.com\r\nTo: billing@desk.example\r\nSubject: Logs\r\n"
        "Message-ID: <long-1@example.com>\r\nContent-Type: text/plain\r\n\r\n" + text
    ).encode()
    opened = mail_receive(raw)
    ticket = open_ticket(owner, account, technical)
    replied = mail_receive(
        raw.replace(b"long-1", b"long-2")
        .replace(b"billing@desk.example", reply_address(ticket).encode())
        .replace(b"anna@example.com", owner.email.encode())
    )

    assert (opened.result, replied.result) == ("opened", "replied")
    for outcome in (opened, replied):
        body = Message.objects.get(pk=outcome.message.pk).body
        assert len(body) == 50_000 and body.startswith("A very long log line.")
        assert body.endswith("[Shortened: the mail's text was 109999 characters long]")
