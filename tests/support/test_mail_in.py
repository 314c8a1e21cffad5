"""Inbound mail parsing: real messages from real clients in, exact help-desk fields out.

The fixtures under ``mail/`` are whole RFC 822 messages as mail servers deliver them; the
smaller messages built inline here pin one behaviour each (a quoting style, an auto-reply
header, a hostile input) without a fixture file per case.
"""

import hashlib
import warnings
from dataclasses import FrozenInstanceError
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.mail_in import (
    InboundAttachment,
    InboundMail,
    MalformedMessage,
    parse_message,
    reply_token_from,
)

MAIL = Path(__file__).parent / "mail"
CET = timezone(timedelta(hours=1))

PNG_SHA256 = "b1ff9c8ea3a780bad09b346c423d2d0e46815926879b18e841d928376a946640"
PDF_SHA256 = "67a1d32d11b012d13cfa4d7fac3ee618d9228823867a1c534e979354f33f9ce4"


def fixture(name: str) -> bytes:
    return (MAIL / name).read_bytes()


def message(
    body: str = "Hello",
    *,
    headers: str = "",
    subject: str = "Server down",
    content_type: str = "text/plain; charset=utf-8",
) -> bytes:
    """A minimal message from a customer; ``headers`` adds lines ending in a newline."""
    return (
        "From: Anna Schmidt <anna@example.com>\n"
        "To: support@desk.example\n"
        f"Subject: {subject}\n"
        f"{headers}"
        "MIME-Version: 1.0\n"
        f"Content-Type: {content_type}\n"
        "Content-Transfer-Encoding: 8bit\n"
        "\n"
        f"{body}"
    ).encode()


# --- the fixtures, field by field -------------------------------------------------------------


def test_a_new_message_to_a_department_keeps_its_text_and_drops_the_signature() -> None:
    """A new ticket: the sender lower-cased for matching, the "-- " signature gone from the
    reply text only, and a "Thanks," line and "- " list kept (the PyPI parsers cut there)."""
    body = (
        "Hello,\n"
        "\n"
        "our card was charged twice for invoice 2026-0042 (EUR 49.00 each, on\n"
        "1 March). Could you please refund the second charge?\n"
        "\n"
        "Steps we checked:\n"
        "- the bank statement shows two captures\n"
        "- the panel lists only one payment\n"
        "\n"
        "Thanks,\n"
        "Anna"
    )
    assert parse_message(fixture("new_plain.eml")) == InboundMail(
        message_id="7d1c0a4e-3b2f-4c19-9e55-0f3c2a9b8d11@example.com",
        in_reply_to="",
        references=(),
        sender="anna.schmidt@example.com",
        sender_name="Anna Schmidt",
        to=("billing@desk.example",),
        cc=("jonas.weber@example.com",),
        subject="Invoice 2026-0042 charged twice",
        text=body + "\n\n--\nAnna Schmidt\nExample GmbH, Musterstrasse 1, 10115 Berlin",
        reply_text=body,
        attachments=(),
        refused_attachments=(),
        is_auto_generated=False,
        auto_reason="",
        date=datetime(2026, 3, 2, 9, 14, 1, tzinfo=CET),
    )


def test_a_gmail_reply_threads_and_loses_its_quoted_history() -> None:
    """Gmail wraps its "On … wrote:" line and quotes with "> "; the plain part is preferred
    over the HTML one, and the indented console line survives."""
    own = (
        "Hi,\n"
        "\n"
        "I restarted it as you suggested, but it still stops right after boot.\n"
        "The console shows:\n"
        "\n"
        "    [Server thread/ERROR]: Failed to bind to port 25565\n"
        "\n"
        "Marco"
    )
    history = (
        "\n\nOn Tue, Mar 3, 2026 at 7:53\u202fAM Support Desk <support@desk.example>\n"
        "wrote:\n"
        "\n"
        "> Hello Marco,\n"
        ">\n"
        "> please restart the server from the panel and tell us whether the error\n"
        "> persists.\n"
        ">\n"
        "> Kind regards,\n"
        "> Support Desk\n"
        ">"
    )
    assert parse_message(fixture("gmail_reply.eml")) == InboundMail(
        message_id="CAH7f2Kp+0v4x3Lq8z9WbXc5tR1yUoJm2sNdEe6aGhQ=Vb0kL@mail.gmail.com",
        in_reply_to="ticket-1042.1772520000@desk.example",
        references=(
            "ticket-1042.1772450000@desk.example",
            "ticket-1042.1772520000@desk.example",
        ),
        sender="marco.rossi.hosting@gmail.com",
        sender_name="Marco Rossi",
        to=("support@desk.example",),
        cc=(),
        subject="Re: [#1042] Minecraft server does not start after update",
        text=own + history,
        reply_text=own,
        attachments=(),
        refused_attachments=(),
        is_auto_generated=False,
        auto_reason="",
        date=datetime(2026, 3, 3, 11, 31, 5, tzinfo=CET),
    )


def test_an_outlook_reply_ends_at_original_message() -> None:
    """Outlook does not quote: everything from "-----Original Message-----" on is history.
    Its plain "Best regards" signature is the customer's own text and stays."""
    own = (
        "Hello,\n"
        "\n"
        "the bot is back online since 07:40, thank you. Please close the ticket.\n"
        "\n"
        "Best regards\n"
        "Petra Novak\n"
        "Contoso Games s.r.o."
    )
    history = (
        "\n\n-----Original Message-----\n"
        "From: Support Desk <support@desk.example>\n"
        "Sent: Tuesday, March 3, 2026 6:15 PM\n"
        "To: Novak, Petra <P.Novak@contoso-games.example>\n"
        "Subject: [#1043] Discord bot offline since maintenance\n"
        "\n"
        "Hello Petra,\n"
        "\n"
        "we restarted the bot container after the maintenance window. Could you check whether"
        " it answers commands again?\n"
        "\n"
        "Support Desk"
    )
    assert parse_message(fixture("outlook_reply.eml")) == InboundMail(
        message_id=(
            "AM9PR07MB71690F2C8E4B1A9D3C5E7F21A1B2A@AM9PR07MB7169.eurprd07.prod.outlook.com"
        ),
        in_reply_to="ticket-1043.1772560000@desk.example",
        references=("ticket-1043.1772560000@desk.example",),
        sender="p.novak@contoso-games.example",
        sender_name="Novak, Petra",
        to=("support@desk.example",),
        cc=("ops@contoso-games.example",),
        subject="RE: [#1043] Discord bot offline since maintenance",
        text=own + history,
        reply_text=own,
        attachments=(),
        refused_attachments=(),
        is_auto_generated=False,
        auto_reason="",
        date=datetime(2026, 3, 4, 8, 2, 38, tzinfo=UTC),
    )


def test_an_html_only_message_becomes_readable_text() -> None:
    """No text/plain part: paragraphs, list items, line breaks, entities and links come out
    readable; the style, script, comment and hidden preheader do not."""
    text = (
        "Hello,\n"
        "\n"
        "we would like a quote for 3 game servers in Frankfurt:\n"
        "\n"
        "- Minecraft, 8 GB RAM\n"
        "- Valheim, 4 GB RAM\n"
        "- Rust, 16 GB RAM\n"
        "\n"
        "Our current setup is described on our wiki (https://wiki.example.fr/servers).\n"
        "Prices & terms: monthly, <EUR 200 in total.\n"
        "\n"
        "Merci,\n"
        "Léa"
    )
    assert parse_message(fixture("html_only.eml")) == InboundMail(
        message_id="1741180811.29812@webmail.example.fr",
        in_reply_to="",
        references=(),
        sender="lea.martin@webmail.example.fr",
        sender_name="Lea Martin",
        to=("sales@desk.example",),
        cc=(),
        subject="Quote for 3 game servers",
        text=text,
        reply_text=text,
        attachments=(),
        refused_attachments=(),
        is_auto_generated=False,
        auto_reason="",
        date=datetime(2026, 3, 5, 14, 20, 11, tzinfo=CET),
    )


def test_rfc2047_headers_and_a_quoted_printable_utf8_body_decode() -> None:
    """German and Japanese survive the encoded-word subject and sender name and the
    quoted-printable body, soft line breaks included."""
    text = (
        "Guten Tag,\n"
        "\n"
        "die Rechnung für meine Bestellung Nr. 7781 enthält einen Fehler: Statt\n"
        "„Größe L“ wurde „Größe XL“ berechnet. Bitte korrigieren Sie die Rechnung.\n"
        "\n"
        "こんにちは。注文番号7781の請求書に誤りがあります。\n"
        "サイズLではなくXLで請求されています。修正をお願いします。\n"
        "\n"
        "Mit freundlichen Grüßen / よろしくお願いします\n"
        "Jürgen Müller"
    )
    assert parse_message(fixture("non_ascii.eml")) == InboundMail(
        message_id="b3f1e2d4-8c7a-4e6f-a1b2-c3d4e5f60789@beispiel.example.de",
        in_reply_to="",
        references=(),
        sender="j.mueller@beispiel.example.de",
        sender_name="Jürgen Müller",
        to=("billing@desk.example",),
        cc=(),
        subject="Rechnung für Bestellung Nr. 7781 \u2013 注文番号7781の請求書",
        text=text,
        reply_text=text,
        attachments=(),
        refused_attachments=(),
        is_auto_generated=False,
        auto_reason="",
        date=datetime(2026, 3, 6, 16, 45, 27, tzinfo=CET),
    )


def test_base64_attachments_arrive_byte_for_byte() -> None:
    """Apple Mail's PNG and PDF, decoded exactly, with their names and types; the body is the
    text part alone."""
    mail = parse_message(fixture("attachments.eml"))

    assert [(a.filename, a.content_type, len(a.content)) for a in mail.attachments] == [
        ("panel.png", "image/png", 69),
        ("invoice-2026-0042.pdf", "application/pdf", 591),
    ]
    png, pdf = mail.attachments
    assert png.content.startswith(b"\x89PNG\r\n\x1a\n")
    assert hashlib.sha256(png.content).hexdigest() == PNG_SHA256
    assert pdf.content.startswith(b"%PDF-1.4\n")
    assert pdf.content.endswith(b"%%EOF\n")
    assert hashlib.sha256(pdf.content).hexdigest() == PDF_SHA256
    assert mail.refused_attachments == ()
    assert mail.text == (
        "Hi,\n"
        "\n"
        "the invoice shows 25% VAT, but we are a Swedish company with a valid VAT\n"
        "number. Screenshot of the panel and the invoice are attached.\n"
        "\n"
        "Tom"
    )
    assert mail.message_id == "9A1B2C3D-4E5F-4061-8273-94A5B6C7D8E9@nordic-play.example"
    assert (mail.sender, mail.sender_name) == ("tom.berg@nordic-play.example", "Tom Berg")
    assert mail.subject == "Wrong VAT on invoice, screenshot attached"
    assert mail.date == datetime(2026, 3, 7, 10, 5, 41, tzinfo=CET)
    assert not mail.is_auto_generated


def test_an_attachment_over_the_size_limit_is_refused_with_its_size() -> None:
    """The limit applies to the decoded size, per attachment; a small one still passes."""
    mail = parse_message(fixture("attachments.eml"), max_attachment_bytes=500)

    assert [a.filename for a in mail.attachments] == ["panel.png"]
    assert mail.refused_attachments == (
        ("invoice-2026-0042.pdf", "too large: 591 bytes, the limit is 500 bytes"),
    )


def test_an_attachment_exactly_at_the_limit_is_kept() -> None:
    """The limit is the largest size allowed, not the first refused."""
    mail = parse_message(fixture("attachments.eml"), max_attachment_bytes=591)

    assert [a.filename for a in mail.attachments] == ["panel.png", "invoice-2026-0042.pdf"]
    assert mail.refused_attachments == ()


def test_attachment_types_outside_the_allowed_set_are_refused() -> None:
    """A desk that only takes images refuses the PDF and says why, so the agent can ask for it."""
    mail = parse_message(fixture("attachments.eml"), allowed_types=frozenset({"image/png"}))

    assert [a.filename for a in mail.attachments] == ["panel.png"]
    assert mail.refused_attachments == (
        ("invoice-2026-0042.pdf", "type application/pdf is not allowed"),
    )


def test_allowed_types_match_case_insensitively_and_by_wildcard() -> None:
    """Settings are typed by people: "IMAGE/*" and "Application/PDF" mean what they say."""
    mail = parse_message(
        fixture("attachments.eml"), allowed_types=frozenset({"IMAGE/*", "Application/PDF"})
    )

    assert [a.filename for a in mail.attachments] == ["panel.png", "invoice-2026-0042.pdf"]


def test_hostile_filenames_lose_their_paths_and_invisible_characters() -> None:
    """Path traversal, a Windows path and a right-to-left override with a control character
    all reduce to a plain last path component; the content is untouched."""
    mail = parse_message(fixture("hostile_filename.eml"))

    assert mail.attachments == (
        InboundAttachment(
            "passwd", "application/octet-stream", b"root:x:0:0:root:/root:/bin/bash\n"
        ),
        InboundAttachment(
            "x.exe",
            "application/x-msdownload",
            b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00\xb8"
            + b"\x00" * 7
            + b"@"
            + b"\x00" * 7,
        ),
        InboundAttachment("invoicefdp.exe", "application/pdf", b"%PDF-1.4\n"),
    )
    assert mail.text == "Here are the files you asked for."


def test_refusals_name_the_original_filename_without_control_characters() -> None:
    """The agent sees the name the customer sent (it may be shown or logged), minus the
    control characters that could forge log lines."""
    mail = parse_message(fixture("hostile_filename.eml"), max_attachment_bytes=8)

    assert mail.attachments == ()
    assert mail.refused_attachments == (
        ("../../etc/passwd", "too large: 32 bytes, the limit is 8 bytes"),
        ("C:\\evil\\x.exe", "too large: 32 bytes, the limit is 8 bytes"),
        ("invoice\u202e fdp.exe", "too large: 9 bytes, the limit is 8 bytes"),
    )


def test_an_out_of_office_reply_is_auto_generated() -> None:
    """Exchange's out-of-office: answering it would start a mail loop."""
    text = (
        "I am out of the office until 16 March 2026 with limited access to e-mail.\n"
        "For urgent matters please contact ops@fjord-servers.example.\n"
        "\n"
        "Med vänliga hälsningar\n"
        "Karin Lindqvist"
    )
    assert parse_message(fixture("out_of_office.eml")) == InboundMail(
        message_id="f1a2b3c4d5e6471889900aabbccddeef@DB8PR02MB5930.eurprd02.prod.outlook.com",
        in_reply_to="ticket-1044.1773039600@desk.example",
        references=("ticket-1044.1773039600@desk.example",),
        sender="karin.lindqvist@fjord-servers.example",
        sender_name="Karin Lindqvist",
        to=("support@desk.example",),
        cc=(),
        subject="Automatic reply: [#1044] Your server has been renewed",
        text=text,
        reply_text=text,
        attachments=(),
        refused_attachments=(),
        is_auto_generated=True,
        auto_reason="Auto-Submitted: auto-generated",
        date=datetime(2026, 3, 9, 7, 0, 4, tzinfo=UTC),
    )


def test_a_bounce_is_auto_generated_and_keeps_the_returned_message() -> None:
    """A Postfix delivery report: the human-readable part is the text, the machine-readable
    status is dropped, and the returned message is attached whole."""
    text = (
        "This is the mail system at host mx.example.org.\n"
        "\n"
        "I'm sorry to have to inform you that your message could not\n"
        "be delivered to one or more recipients. It's attached below.\n"
        "\n"
        "<gone@example.org>: host mx.example.org[192.0.2.10] said: 550 5.1.1\n"
        "    <gone@example.org>: Recipient address rejected: User unknown in local\n"
        "    recipient table (in reply to RCPT TO command)"
    )
    returned = (
        b"From: Support Desk <support@desk.example>\n"
        b"To: gone@example.org\n"
        b"Subject: [#1045] We received your request\n"
        b"Date: Mon, 9 Mar 2026 12:00:00 +0000\n"
        b"Message-ID: <ticket-1045.1773057600@desk.example>\n"
        b"MIME-Version: 1.0\n"
        b"Content-Type: text/plain; charset=utf-8\n"
        b"\n"
        b"Hello, we received your request and will answer soon.\n"
    )
    assert parse_message(fixture("bounce.eml")) == InboundMail(
        message_id="20260309120002.6C1D2E3F4A@mx.example.org",
        in_reply_to="",
        references=(),
        sender="mailer-daemon@mx.example.org",
        sender_name="",
        to=("support@desk.example",),
        cc=(),
        subject="Undelivered Mail Returned to Sender",
        text=text,
        reply_text=text,
        attachments=(InboundAttachment("attachment.eml", "message/rfc822", returned),),
        refused_attachments=(),
        is_auto_generated=True,
        auto_reason="Auto-Submitted: auto-replied",
        date=datetime(2026, 3, 9, 12, 0, 2, tzinfo=UTC),
    )


def test_a_message_without_message_id_gets_one_from_its_bytes() -> None:
    """The generated id is stable, so a redelivered copy is recognised as the same message;
    a "-0000" date (zone unknown) counts as UTC."""
    raw = fixture("no_message_id.eml")
    text = (
        "Our uptime check cannot reach node fra-07 (198.51.100.17) since 04:12 UTC.\n"
        "Ping and TCP 443 both time out."
    )
    assert parse_message(raw) == InboundMail(
        message_id=f"sha256-{hashlib.sha256(raw).hexdigest()}@generated",
        in_reply_to="",
        references=(),
        sender="monitor@status.example.net",
        sender_name="",
        to=("support@desk.example",),
        cc=(),
        subject="node fra-07 unreachable",
        text=text,
        reply_text=text,
        attachments=(),
        refused_attachments=(),
        is_auto_generated=False,
        auto_reason="",
        date=datetime(2026, 3, 10, 4, 29, 58, tzinfo=UTC),
    )
    assert parse_message(raw).message_id == parse_message(raw).message_id
    assert parse_message(raw + b"\n").message_id != parse_message(raw).message_id


def test_a_reply_to_a_plus_address_carries_its_token() -> None:
    """Thunderbird's format=flowed paragraphs are joined again; the recipient keeps the case
    of its local part (the token) while domains are lower-cased."""
    mail = parse_message(fixture("plus_reply.eml"))
    own = (
        "Thanks, the world is back. One question: are the backups from before the restore "
        "still kept, or were they replaced?\n"
        "\n"
        "Sam"
    )
    assert mail == InboundMail(
        message_id="5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b@pixelforge.example",
        in_reply_to="ticket-1046.1773240000@desk.example",
        references=("ticket-1046.1773240000@desk.example",),
        sender="sam@pixelforge.example",
        sender_name="Sam Okafor",
        to=("support+AbC123xyz@desk.example",),
        cc=("DANA@pixelforge.example",),
        subject="Re: [#1046] Backup restore finished",
        text=own + "\n\nOn 11/03/2026 16:05, Support Desk wrote:\n"
        "> Hello Sam,\n"
        ">\n"
        "> the restore of backup 2026-03-10 04:00 finished. Your server is running again.\n"
        ">\n"
        "> Support Desk",
        reply_text=own,
        attachments=(),
        refused_attachments=(),
        is_auto_generated=False,
        auto_reason="",
        date=datetime(2026, 3, 11, 18, 22, 39, tzinfo=CET),
    )
    assert reply_token_from(mail.to + mail.cc, local_part="support") == "AbC123xyz"


# --- reply tokens -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("addresses", "expected"),
    [
        (["support+AbC123xyz@desk.example"], "AbC123xyz"),
        (["Support Desk <support+AbC123xyz@desk.example>"], "AbC123xyz"),
        (["Support+Tok_en-1@desk.example"], "Tok_en-1"),
        (["billing@desk.example", "support+second@desk.example"], "second"),
        (["support+first@desk.example", "support+second@desk.example"], "first"),
        (["support@desk.example"], None),
        (["support+@desk.example"], None),
        (["supporter+AbC@desk.example"], None),
        (["sales+AbC@desk.example"], None),
        (['"support+a b"@desk.example'], None),
        (["support+AbC"], None),
        ([], None),
    ],
)
def test_reply_token_from(addresses: list[str], expected: str | None) -> None:
    """Only ``<local_part>+TOKEN@…`` counts, compared case-insensitively on the local part;
    a token with characters we never mint does not."""
    assert reply_token_from(addresses, local_part="support") == expected


def test_reply_token_from_needs_a_local_part() -> None:
    """An empty local part would match every "+token" address of any mailbox."""
    with pytest.raises(ValueError, match="local_part"):
        reply_token_from(["support+x@desk.example"], local_part="")


# --- quoted history in the clients' styles ----------------------------------------------------

QUOTE_STYLES = {
    "apple mail, quoted attribution": (
        "Yes, it works now.\n\nCheers\n\n"
        "> On 3 Mar 2026, at 10:12, Support Desk <support@desk.example> wrote:\n"
        "> \n> Hello,\n> try again.\n",
        "Yes, it works now.\n\nCheers",
    ),
    "apple mail": (
        "Yes, it works now.\n\n"
        "On 3. Mar 2026, at 10:12, Support Desk <support@desk.example> wrote:\n\n"
        "> Hello,\n> try again.\n",
        "Yes, it works now.",
    ),
    "thunderbird, german": (
        "Danke, läuft wieder.\n\nAm 03.03.26 um 10:12 schrieb Support Desk:\n> Hallo,\n",
        "Danke, läuft wieder.",
    ),
    "gmail, german, wrapped": (
        "Danke!\n\nAm Di., 3. März 2026 um 10:12 Uhr schrieb Support Desk <\n"
        "support@desk.example>:\n\n> Hallo,\n",
        "Danke!",
    ),
    "gmail, french": (
        "Merci !\n\nLe mar. 3 mars 2026 à 10:12, Support Desk <support@desk.example> a\n"
        "écrit :\n\n> Bonjour,\n",
        "Merci !",
    ),
    "gmail, spanish": (
        "Gracias.\n\nEl mar, 3 mar 2026 a las 10:12, Support Desk (<support@desk.example>)\n"
        "escribió:\n\n> Hola,\n",
        "Gracias.",
    ),
    "gmail, japanese": (
        "ありがとうございます。\n\n"
        "2026年3月3日(火) 10:12 Support Desk <support@desk.example>:\n\n> こんにちは\n",
        "ありがとうございます。",
    ),
    "new outlook, rule and header block": (
        "Thanks, done.\n\n________________________________\n"
        "From: Support Desk <support@desk.example>\nSent: Tuesday, March 3, 2026 10:12\n"
        "To: Anna <anna@example.com>\nSubject: Re: x\n\nHello Anna,\nold text\n",
        "Thanks, done.",
    ),
    "outlook, german header block": (
        "Erledigt.\n\nVon: Support Desk <support@desk.example>\n"
        "Gesendet: Dienstag, 3. März 2026 10:12\nAn: Anna <anna@example.com>\n"
        "Betreff: AW: x\n\nHallo,\nalter Text\n",
        "Erledigt.",
    ),
    "outlook, french header block": (
        "C'est fait.\n\nDe : Support Desk <support@desk.example>\n"
        "Envoyé : mardi 3 mars 2026 10:12\nÀ : Anna <anna@example.com>\nObjet : RE: x\n\n"
        "Bonjour,\n",
        "C'est fait.",
    ),
    "android": (
        "ok\n\n-------- Original message --------\nFrom: Support Desk <support@desk.example>\n"
        "Date: 03/03/2026 10:12 (GMT+01:00)\nTo: anna@example.com\nSubject: x\n\nold\n",
        "ok",
    ),
    "bottom-posted": (
        "On Tue, Mar 3, 2026 at 10:12 AM Support Desk <support@desk.example> wrote:\n"
        "> Did the restart help?\n\nYes, thanks.\n",
        "Yes, thanks.",
    ),
    "answered inline": (
        "On Tue, Mar 3, 2026 at 10:12 AM Support Desk <support@desk.example> wrote:\n"
        "> Did the restart help?\nYes.\n> Which version?\n1.21.4\n",
        "Yes.\n1.21.4",
    ),
    "mobile footer": (
        "Fixed, thanks.\n\nSent from my iPhone\n\n"
        "> On 3 Mar 2026, at 10:12, Support Desk <support@desk.example> wrote:\n> hi\n",
        "Fixed, thanks.",
    ),
    "signature above the history": (
        "Works.\n\n-- \nAnna Schmidt\n\n"
        "On Tue, Mar 3, 2026 at 10:12 AM Support Desk <support@desk.example> wrote:\n> hi\n",
        "Works.",
    ),
}


@pytest.mark.parametrize(("body", "expected"), list(QUOTE_STYLES.values()), ids=list(QUOTE_STYLES))
def test_reply_text_strips_each_clients_quoted_history(body: str, expected: str) -> None:
    """Each client and language marks the start of the history differently."""
    assert parse_message(message(body, subject="Re: Server down")).reply_text == expected


def test_a_gmail_html_only_reply_is_stripped_like_its_plain_twin() -> None:
    """Blockquotes become "> " lines, so the same rules strip HTML replies."""
    html = (
        '<div dir="ltr"><div>Hi,</div><div><br></div><div>still broken.</div></div><br>'
        '<div class="gmail_quote"><div dir="ltr" class="gmail_attr">On Tue, Mar 3, 2026 at'
        ' 7:53\u202fAM Support Desk &lt;<a href="mailto:support@desk.example">'
        "support@desk.example</a>&gt; wrote:<br></div>"
        '<blockquote class="gmail_quote">Hello Marco,<br><br>please restart.<br>'
        "<blockquote>older</blockquote></blockquote></div>"
    )
    mail = parse_message(message(html, subject="Re: x", content_type="text/html"))

    assert mail.text == (
        "Hi,\n\nstill broken.\n\n"
        "On Tue, Mar 3, 2026 at 7:53 AM Support Desk <support@desk.example> wrote:\n\n"
        "> Hello Marco,\n>\n> please restart.\n>\n> > older"
    )
    assert mail.reply_text == "Hi,\n\nstill broken."


def test_an_outlook_html_reply_ends_at_its_header_block() -> None:
    """Outlook's HTML puts the From/Sent/To/Subject block in bold tags; as text it is the
    same header block as in its plain replies."""
    html = (
        "<html><body><div class=WordSection1><p class=MsoNormal>Done, thanks.<o:p></o:p></p>"
        "<div style='border:none;border-top:solid #E1E1E1 1.0pt;padding:3.0pt 0cm 0cm 0cm'>"
        "<p class=MsoNormal><b>From:</b> Support Desk &lt;support@desk.example&gt; <br>"
        "<b>Sent:</b> Tuesday, March 3, 2026 6:15 PM<br><b>To:</b> Petra<br>"
        "<b>Subject:</b> [#1043] bot</p></div><p class=MsoNormal>Hello Petra, old.</p>"
        "</div></body></html>"
    )
    mail = parse_message(message(html, subject="RE: x", content_type="text/html"))

    assert mail.reply_text == "Done, thanks."


@pytest.mark.parametrize(
    ("body", "subject"),
    [
        pytest.param(
            "See below, this is what my provider sent.\n\n"
            "---------- Forwarded message ---------\nFrom: Provider <noc@provider.example>\n"
            "Date: Tue, Mar 3, 2026 at 10:00 AM\nSubject: Outage\nTo: <anna@example.com>\n\n"
            "There was an outage.",
            "Fwd: Outage",
            id="a forwarded message is the customer's content",
        ),
        pytest.param(
            "Hello,\n\nOn 3 March I wrote:\nthe server is down.\nStill down.",
            "Re: Server down",
            id="a customer's own 'I wrote:' is no attribution",
        ),
        pytest.param(
            "New ticket\n> 90% CPU since 10:00\nplease help",
            "CPU",
            id="'>' lines in a new message are content",
        ),
        pytest.param(
            "Your mails never arrive; the last one had these headers:\n\n"
            "From: Support Desk <support@desk.example>\nDate: Tue, 3 Mar 2026 10:12\n"
            "To: anna@example.com\nSubject: [#1047] Welcome\n\nWhy is it in my spam folder?",
            "Mails land in spam",
            id="pasted headers in a new message are content",
        ),
    ],
)
def test_reply_text_keeps_what_only_looks_like_history(body: str, subject: str) -> None:
    """Dropping a customer's own words is worse than keeping some history."""
    assert parse_message(message(body, subject=subject)).reply_text == body


# --- auto-generated mail ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        ("Auto-Submitted: auto-replied\n", "Auto-Submitted: auto-replied"),
        ("Auto-Submitted: auto-notified; owner-email=x@y.example\n", None),
        ("X-Autoreply: yes\n", "X-Autoreply: yes"),
        ("X-Autorespond: Out of office\n", "X-Autorespond: Out of office"),
        ("X-Auto-Response-Suppress: All\n", "X-Auto-Response-Suppress: All"),
        ("X-Auto-Response-Suppress: DR, OOF, AutoReply\n", None),
        ("Precedence: bulk\n", "Precedence: bulk"),
        ("Precedence: junk\n", "Precedence: junk"),
        ("Precedence: list\n", "Precedence: list"),
        ("Precedence: auto_reply\n", "Precedence: auto_reply"),
        ("Return-Path: <>\n", "Return-Path: <>"),
        ("List-Id: Game hosts <hosts.lists.example.org>\n", None),
        ("List-Unsubscribe: <mailto:leave@lists.example.org>\n", None),
    ],
)
def test_auto_generated_headers(headers: str, reason: str | None) -> None:
    """Each marker alone flags the message; the reason names the header and its value
    (None here: the value as sent)."""
    mail = parse_message(message(headers=headers))

    assert mail.is_auto_generated
    assert mail.auto_reason == (reason or headers.strip())


@pytest.mark.parametrize("local_part", ["MAILER-DAEMON", "postmaster", "Mailer-Daemon"])
def test_mail_from_a_mailer_daemon_is_auto_generated(local_part: str) -> None:
    """Bounces without any header marker still come from the mail system's own mailbox."""
    raw = message().replace(b"Anna Schmidt <anna@example.com>", f"{local_part}@mx.example".encode())
    mail = parse_message(raw)

    assert mail.is_auto_generated
    assert mail.auto_reason == f"From: {local_part.lower()}@mx.example"


def test_a_multipart_report_is_auto_generated() -> None:
    """A delivery report is machine mail whatever its headers say; its human part is the text."""
    raw = message(
        "--b\nContent-Type: text/plain\n\nDelivery failed.\n--b--\n",
        content_type="multipart/report; report-type=delivery-status; boundary=b",
    )
    mail = parse_message(raw)

    assert (mail.is_auto_generated, mail.auto_reason) == (
        True,
        "Content-Type: multipart/report; report-type=delivery-status",
    )
    assert mail.text == "Delivery failed."


@pytest.mark.parametrize(
    "headers",
    [
        "",
        "Auto-Submitted: no\n",
        "Precedence: first-class\n",
        "X-Auto-Response-Suppress: DR, RN, NRN\n",
        "X-Autoreply: no\n",
        "Return-Path: <anna@example.com>\n",
    ],
)
def test_a_person_s_mail_is_not_auto_generated(headers: str) -> None:
    """Values that merely resemble the markers must not silence a customer."""
    mail = parse_message(message(headers=headers))

    assert (mail.is_auto_generated, mail.auto_reason) == (False, "")


# --- not a message at all ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"  \r\n\r\n ",
        b"hello world, this is no mail\n",
        b"To: support@desk.example\nSubject: who am I\n\nno From\n",
        b"From: Anna Schmidt\nTo: support@desk.example\n\nno address\n",
        b"From: <>\nTo: support@desk.example\n\nnull address\n",
        b"From: undisclosed-recipients:;\n\ngroup only\n",
    ],
)
def test_input_that_is_no_message_is_malformed(raw: bytes) -> None:
    """Without a sender address there is no one to answer: the caller must drop or park it."""
    with pytest.raises(MalformedMessage):
        parse_message(raw)


def test_malformed_message_is_a_value_error() -> None:
    """Callers that already catch ValueError for bad input keep working."""
    assert issubclass(MalformedMessage, ValueError)


def test_text_is_not_bytes() -> None:
    """Decoded text has lost the bytes the charsets and the generated id depend on."""
    with pytest.raises(TypeError):
        parse_message("From: a@b.example\n\nhi")  # type: ignore[arg-type]


def test_mime_nesting_beyond_the_parser_s_reach_is_malformed() -> None:
    """The stdlib parser recurses per level; a hostile depth must not escape as RecursionError."""
    raw = b"From: a@example.com\n"
    for level in range(3000):
        raw += b"Content-Type: multipart/mixed; boundary=b%d\n\n--b%d\n" % (level, level)
    with pytest.raises(MalformedMessage, match="nested"):
        parse_message(raw + b"Content-Type: text/plain\n\nhi\n")


# --- lenient with everything else -------------------------------------------------------------


def test_broken_headers_degrade_instead_of_failing() -> None:
    """An unparseable date is no date; ids come out of comments and missing brackets."""
    mail = parse_message(
        message(
            headers=(
                "Date: sometime last week\n"
                "Message-ID: <abc@x.example> (generated by a broken client)\n"
                "In-Reply-To: <ticket-1@desk.example> (Support's message of Monday)\n"
                "References: ticket-0@desk.example ticket-1@desk.example\n"
            )
        )
    )

    assert mail.date is None
    assert mail.message_id == "abc@x.example"
    assert mail.in_reply_to == "ticket-1@desk.example"
    assert mail.references == ("ticket-0@desk.example", "ticket-1@desk.example")


def test_raw_utf8_headers_and_undeclared_charsets_still_decode() -> None:
    """Lazy clients send 8-bit headers and bodies without a charset: UTF-8 is tried first,
    then Windows-1252."""
    utf8 = parse_message(
        b"From: J\xc3\xbcrgen <j@example.de>\nTo: support@desk.example\n"
        b"Subject: Gr\xc3\xbc\xc3\x9fe\nContent-Type: text/plain\n\nSch\xf6ne Gr\xfc\xdfe\n"
    )
    latin1 = parse_message(
        b"From: J\xfcrgen <j@example.de>\nTo: support@desk.example\n"
        b"Subject: Gr\xfc\xdfe aus K\xf6ln =?utf-8?q?=E2=9C=93?=\n =?utf-8?b?5rOo5paH?=\n\nhi\n"
    )

    assert (utf8.subject, utf8.sender_name, utf8.text) == ("Grüße", "Jürgen", "Schöne Grüße")
    assert (latin1.subject, latin1.sender_name) == ("Grüße aus Köln ✓注文", "Jürgen")


def test_an_unknown_charset_falls_back_to_utf8() -> None:
    """Made-up charset names must not lose the text."""
    mail = parse_message(message("Grüße", content_type="text/plain; charset=x-klingon"))

    assert mail.text == "Grüße"


def test_control_characters_never_reach_the_fields() -> None:
    """An encoded word may hide CR/LF or NUL; a header field must stay one clean line."""
    raw = message("a\x00b\x1bc").replace(
        b"Subject: Server down", b"Subject: =?utf-8?q?Hi=0D=0ABcc=3A_x=00y?="
    )
    mail = parse_message(raw)

    assert mail.subject == "Hi Bcc: x y"
    assert mail.text == "abc"


def test_broken_base64_and_a_missing_boundary_are_survived() -> None:
    """Damaged structure degrades to less content, never to an exception."""
    broken = parse_message(
        b"From: a@example.com\nContent-Type: multipart/mixed\n\n--x\nno boundary declared\n"
    )
    garbled = parse_message(
        message(
            "--b\nContent-Type: text/plain\n\nhi\n--b\n"
            "Content-Type: image/png\nContent-Transfer-Encoding: base64\n"
            "Content-Disposition: attachment; filename=x.png\n\n!!!not base64***\n--b--\n",
            content_type="multipart/mixed; boundary=b",
        )
    )

    assert broken.text == ""
    assert garbled.text == "hi"
    assert [a.filename for a in garbled.attachments] == ["x.png"]


def test_inline_images_are_attachments_and_split_text_is_joined() -> None:
    """Apple Mail puts an inline image between two text parts; both halves are the text.
    An image only referenced by cid from HTML is kept as an attachment too."""
    mixed = parse_message(
        message(
            "--b\nContent-Type: text/plain\n\nBefore the image.\n"
            "--b\nContent-Type: image/png\nContent-Disposition: inline\n"
            "Content-Transfer-Encoding: base64\n\n"
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLv\n"
            "AAAAAElFTkSuQmCC\n"
            "--b\nContent-Type: text/plain\n\nAfter the image.\n--b--\n",
            content_type="multipart/mixed; boundary=b",
        )
    )
    related = parse_message(
        message(
            '--r\nContent-Type: text/html\n\n<p>Look: <img src="cid:shot@x"></p>\n'
            "--r\nContent-Type: image/png; name=shot.png\nContent-ID: <shot@x>\n"
            "Content-Transfer-Encoding: base64\n\n"
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLv\n"
            "AAAAAElFTkSuQmCC\n--r--\n",
            content_type='multipart/related; boundary=r; type="text/html"',
        )
    )

    assert mixed.text == "Before the image.\n\nAfter the image."
    assert [(a.filename, a.content_type) for a in mixed.attachments] == [
        ("attachment.png", "image/png")
    ]
    assert related.text == "Look:"
    assert [a.filename for a in related.attachments] == ["shot.png"]
    assert hashlib.sha256(related.attachments[0].content).hexdigest() == PNG_SHA256


def test_unnamed_and_duplicate_attachment_names_are_made_unique() -> None:
    """Octet-stream parts are typed by their extension, as many clients label every file so."""
    part = "--b\nContent-Type: {}\nContent-Disposition: attachment{}\n\ndata\n"
    mail = parse_message(
        message(
            part.format("application/octet-stream", "; filename=report.pdf")
            + part.format("application/octet-stream", "; filename=report.pdf")
            + part.format("application/octet-stream", "; filename=..")
            + part.format("text/calendar", "")
            + "--b--\n",
            content_type="multipart/mixed; boundary=b",
        )
    )

    assert [(a.filename, a.content_type) for a in mail.attachments] == [
        ("report.pdf", "application/pdf"),
        ("report-2.pdf", "application/pdf"),
        ("attachment.bin", "application/octet-stream"),
        ("attachment-2.bin", "text/calendar"),
    ]


def test_inbound_mail_is_immutable() -> None:
    """A parsed message is a value: handlers cannot change what another one sees."""
    mail = parse_message(message())

    with pytest.raises(FrozenInstanceError):
        mail.subject = "changed"  # type: ignore[misc]


# --- HTML to text -----------------------------------------------------------------------------


def test_html_structure_becomes_plain_text_structure() -> None:
    """Code keeps its indentation, table cells and list levels stay apart, hidden text goes."""
    html = (
        "<pre>  code\n    indented</pre>"
        "<table><tr><td>Plan</td><td>Price</td></tr><tr><td>Small</td><td>5 EUR</td></tr></table>"
        "<ol><li>one<ul><li>sub</li></ul></li><li>two</li></ol>"
        "<p>line<br>break</p><p hidden>secret</p><p style='visibility: hidden'>also</p>"
        "<a href='https://e.example/'>https://e.example</a>"
    )
    mail = parse_message(message(html, content_type="text/html; charset=utf-8"))

    assert mail.text == (
        "  code\n    indented\n\nPlan Price\nSmall 5 EUR\n\n1. one\n  - sub\n2. two\n\n"
        "line\nbreak\n\nhttps://e.example"
    )


def test_html_that_looks_like_a_url_converts_without_warnings() -> None:
    """A body that is just a link must not make BeautifulSoup warn about fetching URLs."""
    with warnings.catch_warnings(record=True) as caught:
        mail = parse_message(message("https://panel.example/s/42", content_type="text/html"))

    assert mail.text == "https://panel.example/s/42"
    assert caught == []


def test_deeply_nested_html_does_not_exhaust_the_stack() -> None:
    """Hostile markup nested far beyond Python's recursion limit still converts."""
    html = "<div>" * 50_000 + "deep" + "</div>" * 50_000
    assert parse_message(message(html, content_type="text/html")).text == "deep"


def test_a_blank_plain_part_gives_way_to_its_html_alternative() -> None:
    """Some senders ship an empty text/plain beside the real HTML."""
    raw = message(
        "--a\nContent-Type: text/plain\n\n \n--a\nContent-Type: text/html\n\n<p>Real text</p>\n"
        "--a--\n",
        content_type="multipart/alternative; boundary=a",
    )
    assert parse_message(raw).text == "Real text"


# --- properties -------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None, database=None)
@given(st.binary(max_size=2000))
def test_any_bytes_give_a_message_or_malformed_message(raw: bytes) -> None:
    """Whatever arrives from the internet, parsing either succeeds or says it is no mail."""
    try:
        mail = parse_message(b"From: a@example.com\n" + raw)
    except MalformedMessage:
        return
    assert mail.sender == "a@example.com"
    assert "\n" not in mail.subject


@settings(max_examples=200, deadline=None, database=None)
@given(st.text(max_size=300))
def test_any_filename_becomes_one_safe_path_component(name: str) -> None:
    """Whatever name arrives, the stored name is one non-empty, bounded path component."""
    raw = message(
        "--b\nContent-Type: application/octet-stream\n"
        f"Content-Disposition: attachment; filename*=UTF-8''{quote(name, safe='')}\n\nx\n--b--\n",
        content_type="multipart/mixed; boundary=b",
    )
    (attachment,) = parse_message(raw).attachments
    filename = attachment.filename

    assert filename
    assert len(filename.encode()) <= 150
    assert "/" not in filename
    assert "\\" not in filename
    assert not filename.startswith(".")
    assert filename not in {".", ".."}
    assert all(ch >= " " and ch != "\x7f" for ch in filename)
