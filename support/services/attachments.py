"""Attachments of ticket messages: checked, then kept through Django's storage API (local
files by default, any ``django-storages`` backend when configured), never at a public URL.

A file is refused (400 ``validation_failed``, naming it) when it is too large
(``SUPPORT_ATTACHMENT_MAX_BYTES``), when a message carries too many
(``SUPPORT_ATTACHMENTS_PER_MESSAGE``), when its name's type is not one a help desk needs
(``ALLOWED_TYPES``), or when its content is not what its name says (``type_mismatch``). The
type stored is the content's: an image, PDF or archive must be recognised as exactly that by
its bytes (``filetype``), so a page of HTML named ``invoice.pdf`` is refused rather than kept as
a PDF; a text, log, CSV or JSON file must be text and not markup a browser would render as a
page (``content_kind``). The name is only shown: the stored file is named by its id.
"""

import mimetypes
from dataclasses import dataclass
from datetime import datetime, timedelta

import filetype
from django.conf import settings
from django.core.files.base import ContentFile
from django.utils.translation import gettext as _

from hosting.errors import ValidationFailed
from support.mail_in import safe_filename
from support.models import Attachment, Message

# What customers and staff send each other: screenshots, documents, logs and archives of them.
ALLOWED_TYPES = frozenset(
    {
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "application/pdf",
        "text/plain",
        "text/csv",
        "application/json",
        "application/zip",
        "application/gzip",
        "application/x-tar",
        "application/x-gzip",
    }
)
# Types whose content is text: their bytes must be text (``content_kind``), which the name then
# names more precisely. Every other allowed type has a signature its content must carry.
TEXT_TYPES = frozenset({"text/plain", "text/csv", "application/json"})
# Extensions the platform's mimetypes table may not know (or calls by an encoding only).
EXTRA_TYPES = {
    ".log": "text/plain",
    ".yml": "text/plain",
    ".yaml": "text/plain",
    ".gz": "application/gzip",
    ".tgz": "application/gzip",
}


@dataclass(frozen=True)
class Upload:
    """A file as it arrived (a form, the API, an e-mail): its name as given, and its bytes."""

    filename: str
    content: bytes


def content_type_of(filename: str) -> str | None:
    extension = ("." + filename.rsplit(".", 1)[-1].lower()) if "." in filename else ""
    return EXTRA_TYPES.get(extension) or mimetypes.guess_type(f"x{extension}")[0]


def too_large(filename: str) -> ValidationFailed:
    """The refusal of a file over ``SUPPORT_ATTACHMENT_MAX_BYTES`` (also for one not read)."""
    limit = settings.SUPPORT_ATTACHMENT_MAX_BYTES / (1024 * 1024)
    return ValidationFailed.field(
        "attachments",
        "too_large",
        _("%(name)s is larger than %(limit)s MB.")
        % {"name": safe_filename(filename), "limit": f"{limit:g}"},
    )


def check_upload(upload: Upload) -> tuple[str, str]:
    """The safe name and the content type of ``upload``, or the reason it is refused."""
    name = safe_filename(upload.filename)
    if len(upload.content) > settings.SUPPORT_ATTACHMENT_MAX_BYTES:
        raise too_large(upload.filename)
    declared = content_type_of(name)
    if declared not in ALLOWED_TYPES:
        raise ValidationFailed.field(
            "attachments",
            "type_not_allowed",
            _("%(name)s: only images, PDF, text, logs and archives can be attached.")
            % {"name": name},
        )
    if content_kind(upload.content) != _kind(declared):
        raise ValidationFailed.field(
            "attachments",
            "type_mismatch",
            _("%(name)s is not the kind of file its name says.") % {"name": name},
        )
    return name, declared


def _kind(content_type: str) -> str:
    """What ``content_kind`` finds in a file of ``content_type``."""
    if content_type in TEXT_TYPES:
        return "text/plain"
    return _SAME_FORMAT.get(content_type, content_type)


# gzip is sniffed as application/gzip whatever the name's table calls it.
_SAME_FORMAT = {"application/x-gzip": "application/gzip"}

# The WHATWG MIME Sniffing Standard's patterns of a page (§7.1, "identifying an unknown MIME
# type"): after leading whitespace, a tag a browser renders as HTML, ended by a space or ">";
# and XML (SVG, which runs scripts, among it). Written out here: the magic-number libraries
# know binary signatures only, or an HTML page only by its doctype.
_PAGE_TAGS = (
    b"<!doctype html",
    b"<html",
    b"<head",
    b"<script",
    b"<iframe",
    b"<h1",
    b"<div",
    b"<font",
    b"<table",
    b"<a",
    b"<style",
    b"<title",
    b"<b",
    b"<body",
    b"<br",
    b"<p",
    b"<!--",
)
_TAG_ENDS = frozenset({b"", b" ", b">", b"\t", b"\n", b"\x0c", b"\r"})
# The standard's "binary data bytes": a file with one of them in its head is not text.
_BINARY_BYTES = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])
_TEXT_BOMS = (b"\xfe\xff", b"\xff\xfe", b"\xef\xbb\xbf")
_HEAD_BYTES = 1445  # the standard's resource header


def content_kind(content: bytes) -> str:
    """The type ``content`` itself shows: a signature ``filetype`` knows (``image/png``,
    ``application/pdf``, ``application/x-executable`` ...), else ``text/html`` or ``text/xml``
    for markup, ``text/plain`` for text, ``application/octet-stream`` for anything else."""
    sniffed = filetype.guess_mime(content)
    if sniffed is not None:
        return _SAME_FORMAT.get(sniffed, sniffed)
    head = content[:_HEAD_BYTES]
    if head.startswith(_TEXT_BOMS):
        head = head.removeprefix(b"\xef\xbb\xbf")
        if not head.startswith((b"\xfe\xff", b"\xff\xfe")):
            return _markup_or_text(head)
        return "text/plain"  # UTF-16, whose zero bytes are no binary
    if any(byte in _BINARY_BYTES for byte in head):
        return "application/octet-stream"
    return _markup_or_text(head)


def _markup_or_text(head: bytes) -> str:
    start = head.lstrip(b" \t\n\x0c\r").lower()
    if start.startswith(b"<?xml") or start.startswith(b"<svg"):
        return "text/xml"
    for tag in _PAGE_TAGS:
        if start.startswith(tag) and start[len(tag) : len(tag) + 1] in _TAG_ENDS:
            return "text/html"
    return "text/plain"


def attachments_add(*, message: Message, uploads: list[Upload]) -> list[Attachment]:
    """Keep ``uploads`` on ``message``, in the caller's transaction; every file is checked
    before any is stored, so a refused one leaves none behind."""
    if len(uploads) > settings.SUPPORT_ATTACHMENTS_PER_MESSAGE:
        raise ValidationFailed.field(
            "attachments",
            "too_many",
            _("At most %(limit)s files per message.")
            % {"limit": settings.SUPPORT_ATTACHMENTS_PER_MESSAGE},
        )
    checked = [(upload, *check_upload(upload)) for upload in uploads]
    kept = []
    for upload, name, content_type in checked:
        attachment = Attachment(
            message=message, filename=name, content_type=content_type, size=len(upload.content)
        )
        attachment.file.save(attachment.id, ContentFile(upload.content), save=False)
        attachment.save(force_insert=True)
        kept.append(attachment)
    return kept


# A file younger than this may belong to a transaction still open: never swept.
ORPHAN_GRACE = timedelta(hours=1)


def attachments_orphans_remove(*, now: datetime) -> int:
    """Remove stored files no attachment names: those of a message whose transaction failed
    after its files were written (the storage is not transactional). Only this month's and last
    month's folders are looked at, since orphans are made only when files are written, and this
    runs daily; a file is left alone for ``ORPHAN_GRACE`` after it was written. Returns how
    many were removed."""
    storage = Attachment._meta.get_field("file").storage
    last_month = now.replace(day=1) - timedelta(days=1)
    removed = 0
    for folder in sorted({f"support/{moment:%Y/%m}" for moment in (last_month, now)}):
        if not storage.exists(folder):
            continue
        _folders, names = storage.listdir(folder)
        paths = [f"{folder}/{name}" for name in names]
        known = set(Attachment.objects.filter(file__in=paths).values_list("file", flat=True))
        for path in paths:
            if path in known or now - storage.get_modified_time(path) < ORPHAN_GRACE:
                continue
            storage.delete(path)
            removed += 1
    return removed
