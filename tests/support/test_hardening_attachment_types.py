"""Issue 28: an attachment's type comes from its content. A file named ``.pdf`` (or ``.png``,
``.zip`` ...) must be recognised as exactly that by its bytes, and a text file must be text,
not a page a browser would render; a mismatch is refused on every way in: the dashboard (next
to the field), the API (400 ``validation_failed``, ``type_mismatch``) and mail (a note on the
kept message)."""

import gzip

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from hosting.errors import ValidationFailed
from support.models import Attachment, Message, Ticket
from support.services.attachments import Upload, check_upload
from support.services.mail import mail_receive
from tests.billing.api.conftest import data_of
from tests.dashboard import field_errors, signed_in
from tests.support.test_tickets import open_ticket

pytestmark = pytest.mark.django_db
HTML = b"<!DOCTYPE html><html><body><script>document.cookie</script></body></html>"
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
PDF = b"%PDF-1.7\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n"

MISMATCHES = [
    ("invoice.pdf", HTML),
    ("invoice.pdf", b"  <html><p>Pay here</p></html>"),
    ("invoice.pdf", b"just some words"),
    ("screen.png", b"<script>alert(1)</script>"),
    ("screen.png", PDF),
    ("logs.zip", b"not an archive"),
    ("notes.txt", HTML),
    ("notes.txt", b"<svg xmlns='http://www.w3.org/2000/svg' onload='alert(1)'/>"),
    ("data.csv", b"\x00\x01\x02\x03binary"),
    ("config.json", PNG),
]
MATCHES = [
    ("invoice.pdf", PDF, "application/pdf"),
    ("screen.png", PNG, "image/png"),
    ("latest.log", b"[12:00:01] [Server thread/INFO]: <Steve> hi\n\x1b[0m", "text/plain"),
    ("data.csv", b"name,ram\nlobby,2048\n", "text/csv"),
    ("config.json", b'{"motd": "<b>hi</b>"}', "application/json"),
    ("world.gz", gzip.compress(b"level.dat", mtime=0), "application/gzip"),
    ("windows.txt", "Grüße".encode("utf-16"), "text/plain"),
]


@pytest.mark.parametrize(("name", "content"), MISMATCHES)
def test_content_that_is_not_what_its_name_says_is_refused(name, content):
    with pytest.raises(ValidationFailed) as refused:
        check_upload(Upload(filename=name, content=content))

    assert refused.value.details["fields"][0]["code"] == "type_mismatch"


@pytest.mark.parametrize(("name", "content", "content_type"), MATCHES)
def test_content_that_is_what_its_name_says_keeps_that_type(name, content, content_type):
    assert check_upload(Upload(filename=name, content=content)) == (name, content_type)


def test_the_dashboard_refuses_html_named_pdf(owner, technical, settings):
    response = signed_in(owner).post(
        "/support/new",
        {
            "department": technical.id,
            "subject": "Invoice",
            "body": "See the file.",
            "attachments": [SimpleUploadedFile("invoice.pdf", HTML)],
        },
    )

    assert response.status_code == 200
    assert field_errors(response, "attachments") == [
        "invoice.pdf is not the kind of file its name says."
    ]
    assert not Ticket.objects.exists() and not Attachment.objects.exists()


def test_the_api_refuses_html_named_pdf(owner, account, technical, make_token, client_for):
    api = client_for(make_token(owner, account, ["tickets:read", "tickets:write"]))
    ticket = open_ticket(owner, account, technical)

    answer = api.post(
        f"/v1/tickets/{ticket.id}/attachments",
        {"file": [SimpleUploadedFile("invoice.pdf", HTML, "application/pdf")]},
        format="multipart",
    )

    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "validation_failed"
    assert error["details"]["fields"] == [
        {
            "name": "attachments",
            "code": "type_mismatch",
            "message": "invoice.pdf is not the kind of file its name says.",
        }
    ]
    assert Message.objects.filter(ticket=ticket).count() == 1

    kept = api.post(
        f"/v1/tickets/{ticket.id}/attachments",
        {"file": [SimpleUploadedFile("invoice.pdf", PDF, "text/html")]},
        format="multipart",
    )
    (attachment,) = data_of(kept, 201)["message"]["attachments"]
    assert attachment["content_type"] == "application/pdf"


def test_mail_keeps_the_message_and_notes_the_refused_file(settings, billing_department):
    settings.SUPPORT_REPLY_ADDRESS = "support@desk.example"
    raw = (
        b"From: anna@example.com\r\nTo: billing@desk.example\r\nSubject: Invoice\r\n"
        b"Message-ID: <typed-1@example.com>\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n'
        b"--b\r\nContent-Type: text/plain\r\n\r\nSee attached.\r\n"
        b"--b\r\nContent-Type: application/pdf\r\n"
        b'Content-Disposition: attachment; filename="invoice.pdf"\r\n\r\n' + HTML + b"\r\n--b--\r\n"
    )

    outcome = mail_receive(raw)

    assert outcome.result == "opened"
    assert not Attachment.objects.exists()
    body = Message.objects.get(pk=outcome.message.pk).body
    assert "[Attachments not kept]" in body
    assert "invoice.pdf: invoice.pdf is not the kind of file its name says." in body
