"""Where a bot's code comes from: a git repository or an archive, from allowed hosts only."""

import pytest

BOT = {
    "name": "Helper",
    "region": "eu-central",
    "runtime": "python-3.13",
    "start_command": "python bot.py",
    "token": "MTA1.abcdefghijklmnopqrstuvwx",
}


def test_a_git_source_is_kept_and_shown(owner_api):
    source = {"type": "git", "url": "https://github.com/example/bot.git", "ref": "v1.2"}
    answer = owner_api.post("/v1/bots", BOT | {"source": source}, format="json")
    assert answer.status_code == 201, answer.content
    assert answer.json()["data"]["bot"]["source"] == source
    bot_id = answer.json()["data"]["bot"]["id"]
    cleared = owner_api.patch(f"/v1/bots/{bot_id}", {"source": None}, format="json")
    assert cleared.json()["data"]["bot"]["source"] is None


@pytest.mark.parametrize(
    "source, field, code",
    [
        ({"type": "svn", "url": "https://github.com/x"}, "source.type", "invalid_choice"),
        ({"type": "git", "url": "http://github.com/x/y.git"}, "source.url", "not_allowed"),
        ({"type": "git", "url": "https://evil.example/x.git"}, "source.url", "not_allowed"),
        ({"type": "git", "url": "file:///etc"}, "source.url", "not_allowed"),
        ({"type": "git", "url": "https://u:p@github.com/x/y.git"}, "source.url", "invalid"),
        (
            {"type": "git", "url": "https://github.com/x/y.git", "ref": "--upload-pack=x"},
            "source.ref",
            "invalid",
        ),
        ({"type": "archive", "url": "https://github.com/x/y/file.exe"}, "source.url", "invalid"),
    ],
)
def test_sources_from_elsewhere_are_refused(owner_api, source, field, code):
    answer = owner_api.post("/v1/bots", BOT | {"source": source}, format="json")
    assert answer.status_code == 400, answer.content
    problem = answer.json()["error"]["details"]["fields"][0]
    assert (problem["name"], problem["code"]) == (field, code)


def test_settings_may_allow_local_repositories(owner_api, settings):
    settings.BOT_SOURCE_SCHEMES = ["https", "file"]
    source = {"type": "git", "url": "file:///srv/repos/bot.git"}
    answer = owner_api.post("/v1/bots", BOT | {"source": source}, format="json")
    assert answer.status_code == 201, answer.content


def archive_bytes(kind: str = "tar") -> bytes:
    import io
    import tarfile
    import zipfile

    buffer = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(buffer, "w") as bundle:
            bundle.writestr("bot.py", "print('hi')\n")
    else:
        with tarfile.open(fileobj=buffer, mode="w:gz") as bundle:
            data = b"print('hi')\n"
            info = tarfile.TarInfo("bot.py")
            info.size = len(data)
            bundle.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def upload(api, bot_id, name, content, **extra):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return api.post(
        f"/v1/bots/{bot_id}/source",
        {"file": SimpleUploadedFile(name, content), **extra},
        format="multipart",
    )


@pytest.fixture
def bot_id(owner_api):
    return owner_api.post("/v1/bots", BOT, format="json").json()["data"]["bot"]["id"]


@pytest.mark.parametrize("name, kind", [("code.tar.gz", "tar"), ("code.zip", "zip")])
def test_an_uploaded_archive_becomes_the_source(
    owner_api, bot_id, name, kind, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.MEDIA_ROOT = str(tmp_path)
    answer = upload(owner_api, bot_id, name, archive_bytes(kind))
    assert answer.status_code == 200, answer.content
    source = answer.json()["data"]["bot"]["source"]
    assert source["type"] == "upload" and source["name"].endswith(name.split(".", 1)[1])
    with django_capture_on_commit_callbacks(execute=True):
        again = upload(owner_api, bot_id, name, archive_bytes(kind))
    assert again.status_code == 200

    stored = list((tmp_path / "bot-sources" / bot_id).iterdir())
    assert len(stored) == 1  # the first archive went when the second replaced it


@pytest.mark.parametrize(
    "name, content, extra, code",
    [
        ("code.exe", b"MZ....", {}, "invalid"),
        ("code.zip", b"not a zip", {}, "invalid"),
        ("code.zip", None, {"note": "x"}, "unknown_field"),
    ],
)
def test_other_files_are_refused(owner_api, bot_id, name, content, extra, code, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    answer = upload(owner_api, bot_id, name, content or archive_bytes("zip"), **extra)
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["details"]["fields"][0]["code"] == code
    assert not (tmp_path / "bot-sources").exists() or not any(
        (tmp_path / "bot-sources").rglob("*.*")
    )


def test_too_large_is_refused_unread(owner_api, bot_id, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    settings.BOT_ARCHIVE_MAX_BYTES = 1024
    answer = upload(owner_api, bot_id, "code.zip", archive_bytes("zip") + b"\0" * 2048)
    assert answer.json()["error"]["details"]["fields"][0]["code"] == "too_large"


def test_only_writers_and_members_upload(
    owner, account, make_token, client_for, outsider_api, bot_id
):
    reader = client_for(make_token(owner, account, ["bots:read"]))
    assert upload(reader, bot_id, "code.zip", archive_bytes("zip")).status_code == 403
    assert upload(outsider_api, bot_id, "code.zip", archive_bytes("zip")).status_code == 404


def test_the_node_of_the_bot_fetches_it_and_no_other(owner_api, client_for, settings, tmp_path):
    from tests.servers.test_nodes import new_node

    settings.MEDIA_ROOT = str(tmp_path)
    _, token = new_node()
    bot_id = owner_api.post("/v1/bots", BOT, format="json").json()["data"]["bot"]["id"]
    content = archive_bytes("tar")
    upload(owner_api, bot_id, "code.tar.gz", content)
    fetched = client_for(token).get(f"/v1/agent/bots/{bot_id}/source")
    assert fetched.status_code == 200
    assert b"".join(fetched.streaming_content) == content
    _, other = new_node("other", ports="")
    assert client_for(other).get(f"/v1/agent/bots/{bot_id}/source").status_code == 404
    assert owner_api.get(f"/v1/agent/bots/{bot_id}/source").status_code == 401
