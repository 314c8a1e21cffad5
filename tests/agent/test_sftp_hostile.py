"""The hostile-tenant test extended to SFTP (issue 30): two customers' servers on one SFTP
agent, A hostile. A's folder holds links to B's folder, to /etc/shadow and to ``..``, and a
relative chain of links that ends in B's folder; A then aims every SFTP operation through them,
and signs in with its own key as B's server's user. Each is refused or confined, B's folder and
/etc/shadow are unchanged to the byte, and nothing of them reaches A."""

import contextlib
import io

import paramiko
import pytest

from tests.agent.test_files_hostile import (
    UNNAMED,
    VICTIM_NAME,
    VICTIM_SECRET,
    _secrets_of_the_node,
    _shadow,
    _tree,
)
from tests.agent.test_isolation import pytestmark  # noqa: F401 - its skip: a root agent
from tests.agent.test_sftp import make_site, paramiko_sftp, sftp_agent  # noqa: F401 - fixtures


def test_no_sftp_operation_of_a_hostile_tenant_reaches_outside_its_server(
    sftp_agent,  # noqa: F811 - the fixture imported above
    make_site,  # noqa: F811
    control_plane,
):
    victim = make_site(
        f"printf '{VICTIM_SECRET}' > {VICTIM_NAME}; mkdir -p world;"
        f" printf '{VICTIM_SECRET} world' > world/level.dat; echo x > world/{UNNAMED}"
    )
    attacker = make_site(
        "printf 'mine' > own.txt; mkdir -p sub;"
        f" ln -s {victim.folder} link-to-b; ln -s /etc/shadow link-to-shadow; ln -s .. up;"
        f" ln -s hop2 hop1; ln -s sub/hop3 hop2; ln -s ../../{victim.id} sub/hop3"
    )
    before, shadow_before = _tree(victim.folder), _shadow()
    seen: list[bytes] = []

    # A's key is A's: as B's server's user it is refused, whatever A's rights on its own server.
    with pytest.raises(paramiko.AuthenticationException):
        paramiko_sftp(sftp_agent, victim.username, key=attacker.key)

    through = ["link-to-b", "hop1", f"up/{victim.id}", "sub/hop3", "up/up/etc"]
    refused = (PermissionError, FileNotFoundError, OSError)
    with paramiko_sftp(sftp_agent, attacker.username, key=attacker.key) as client:
        # Listed as links, with their targets as stored; never entered.
        seen.append(repr(client.listdir_attr("/")).encode())
        for path in ("link-to-b", "hop1", "link-to-shadow"):
            seen.append(client.readlink(path).encode())
        for path in through:
            with contextlib.suppress(*refused):
                seen.append(repr(client.listdir(path)).encode())
            for name in (VICTIM_NAME, f"world/{UNNAMED}", "shadow"):
                target = f"{path}/{name}"
                with pytest.raises(refused):
                    client.stat(target)
                with pytest.raises(refused), client.open(target, "r") as file:
                    seen.append(file.read())
                with pytest.raises(refused):
                    client.putfo(io.BytesIO(b"owned"), target)
                with pytest.raises(refused):
                    client.remove(target)
                with pytest.raises(refused):
                    client.chmod(target, 0o777)
                with pytest.raises(refused):
                    client.rename("own.txt", target)
                with pytest.raises(refused):
                    client.rename(target, "got")
            with pytest.raises(refused):
                client.mkdir(f"{path}/planted")
        with pytest.raises(refused), client.open("link-to-shadow", "r") as file:
            seen.append(file.read())
        with pytest.raises(refused):
            client.symlink(str(victim.folder), "new-link")
        # A's own ".." and "/" stay A's folder.
        assert client.normalize("/../..") == "/"
        assert set(client.listdir("/../..")) >= {"own.txt", "link-to-b"}
        # Removing a link removes the link, not its target.
        client.remove("link-to-b")
        client.remove("link-to-shadow")

    assert (attacker.folder / "own.txt").read_text() == "mine"
    assert not (attacker.folder / "got").exists()
    assert _tree(victim.folder) == before
    assert _shadow() == shadow_before
    leaks = [
        (secret, answer[:200])
        for answer in seen
        for secret in _secrets_of_the_node()
        if secret in answer
    ]
    assert leaks == []
