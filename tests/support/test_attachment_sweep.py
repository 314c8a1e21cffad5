"""Files written for a message whose transaction then failed are swept by housekeeping; files of
kept attachments, and files still young enough to belong to an open transaction, stay."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.db import transaction
from django.utils import timezone

from support.models import Attachment
from support.services.attachments import (
    ORPHAN_GRACE,
    Upload,
    attachments_add,
    attachments_orphans_remove,
)
from tests.support.test_tickets import open_ticket, reply

pytestmark = pytest.mark.django_db
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


class Rollback(Exception):
    pass


def stored_files(media) -> list[str]:
    return sorted(str(path.relative_to(media)) for path in media.rglob("*") if path.is_file())


def test_a_failed_message_leaves_a_file_that_the_sweep_removes(owner, account, technical, settings):
    media = Path(settings.MEDIA_ROOT)
    ticket = open_ticket(owner, account, technical)
    kept_message = reply(ticket, owner, "Screenshot", staff=False)
    (kept,) = attachments_add(message=kept_message, uploads=[Upload("kept.png", PNG)])
    # The message's savepoint is rolled back after its file was written.
    with pytest.raises(Rollback), transaction.atomic():
        message = reply(ticket, owner, "Another", staff=False)
        attachments_add(message=message, uploads=[Upload("lost.png", PNG)])
        raise Rollback
    assert len(stored_files(media)) == 2 and Attachment.objects.count() == 1

    too_soon = attachments_orphans_remove(now=timezone.now())
    swept = attachments_orphans_remove(now=timezone.now() + ORPHAN_GRACE + timedelta(minutes=1))

    assert (too_soon, swept) == (0, 1)
    assert stored_files(media) == [kept.file.name]
    assert kept.file.read() == PNG
