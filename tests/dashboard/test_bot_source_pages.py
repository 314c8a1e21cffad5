"""The bot form's Code section: a git repository, an archive URL, or an uploaded archive."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from servers.models import Bot
from tests.dashboard import field_errors, signed_in
from tests.dashboard.test_bots_pages import BOT_FORM, bot  # noqa: F401 - fixture
from tests.servers.test_bot_source import archive_bytes


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


def test_a_bot_created_with_a_git_repository(owner):
    form = BOT_FORM | {
        "source_kind": "git",
        "source_url": "https://github.com/example/bot.git",
        "source_ref": "main",
    }
    response = signed_in(owner).post("/bots/new", form)
    assert response.status_code == 302, response.context["form"].errors
    created = Bot.objects.get()
    assert (created.source_type, created.source_url, created.source_ref) == (
        "git",
        "https://github.com/example/bot.git",
        "main",
    )


def test_a_bot_created_with_an_uploaded_archive(owner):
    upload = SimpleUploadedFile("code.zip", archive_bytes("zip"))
    form = BOT_FORM | {"source_kind": "upload", "source_file": upload}
    response = signed_in(owner).post("/bots/new", form)
    assert response.status_code == 302, response.context["form"].errors
    created = Bot.objects.get()
    assert created.source_type == "upload" and created.source_archive.name.endswith(".zip")


@pytest.mark.parametrize(
    "change, field",
    [
        ({"source_kind": "git", "source_url": ""}, "source_url"),
        ({"source_kind": "upload"}, "source_file"),
        ({"source_kind": "git", "source_url": "https://evil.example/x.git"}, "source_url"),
        (
            {"source_kind": "upload", "source_file": SimpleUploadedFile("x.exe", b"MZ")},
            "source_file",
        ),
    ],
)
def test_a_refused_source_shows_on_its_field_and_creates_nothing(owner, change, field):
    response = signed_in(owner).post("/bots/new", BOT_FORM | change)
    assert response.status_code == 200
    assert field_errors(response, field)
    assert not Bot.objects.exists()


def test_settings_keep_uploaded_code_unless_a_new_file_is_chosen(owner, bot):  # noqa: F811
    client = signed_in(owner)
    form = BOT_FORM | {"token": "", "source_kind": "upload"}
    form["source_file"] = SimpleUploadedFile("v1.tar.gz", archive_bytes("tar"))
    assert client.post(f"/bots/{bot.id}/edit", form).status_code == 302
    first = Bot.objects.get(pk=bot.pk).source_archive.name
    page = client.get(f"/bots/{bot.id}/edit").content.decode()
    assert "Now: " in page
    form.pop("source_file")
    assert client.post(f"/bots/{bot.id}/edit", form).status_code == 302
    assert Bot.objects.get(pk=bot.pk).source_archive.name == first
