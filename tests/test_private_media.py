"""What customers upload (ticket attachments, bot code) is the control plane's user's alone:
files 0600 in folders 0700, from MEDIA_ROOT down, whatever the process's umask."""

import os
import stat
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from support.models import Attachment, Department
from tests.servers.test_bot_source import BOT, archive_bytes, upload


@pytest.fixture
def media(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path / "media")  # made by the storage, as on a new machine
    return tmp_path / "media"


@pytest.fixture(autouse=True)
def open_umask():
    """The loosest umask a service might be started with: modes come from the settings."""
    previous = os.umask(0)
    yield
    os.umask(previous)


def assert_private(media: Path, stored: Path) -> None:
    assert stored.is_file() and stat.S_IMODE(stored.stat().st_mode) == 0o600
    folders = [stored.parent, *stored.parent.parents]
    modes = {
        str(folder.relative_to(media)): stat.S_IMODE(folder.stat().st_mode)
        for folder in folders[: folders.index(media) + 1]
    }
    assert modes == dict.fromkeys(modes, 0o700)  # MEDIA_ROOT itself is "."


def test_a_ticket_attachment_is_private(owner_api, media):
    department = Department.objects.create(name="Technical", email="support@desk.example")
    ticket = owner_api.post(
        "/v1/tickets",
        {"subject": "Lag", "body": "Every evening.", "department": department.id},
        format="json",
    ).json()["data"]["ticket"]
    answer = owner_api.post(
        f"/v1/tickets/{ticket['id']}/attachments",
        {"file": [SimpleUploadedFile("latest.log", b"[ERROR] bind failed\n")], "body": "Logs."},
        format="multipart",
    )
    assert answer.status_code == 201, answer.content
    attachment = Attachment.objects.get()
    assert_private(media, Path(attachment.file.path))


def test_an_uploaded_bot_archive_is_private(owner_api, media):
    bot_id = owner_api.post("/v1/bots", BOT, format="json").json()["data"]["bot"]["id"]
    answer = upload(owner_api, bot_id, "code.tar.gz", archive_bytes("tar"))
    assert answer.status_code == 200, answer.content
    [stored] = (media / "bot-sources" / bot_id).iterdir()
    assert_private(media, stored)
