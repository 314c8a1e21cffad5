"""Fuzz the API: schemathesis, every check, against a live server configured as in production.

    .venv/bin/python scripts/fuzz.py [--max-examples N] [--seed S] [--max-time SECONDS]

What runs: a fresh PostgreSQL database, gunicorn with the production settings (DEBUG off,
Redis, prepared statements), the task worker (webhook deliveries, server actions) and
schemathesis over the live ``/v1/openapi.json`` with a fixed seed. The build fails on any 5xx,
any error body that is not the contract's JSON envelope, any answer that contradicts the
schema and any status code the schema does not document.

Everything runs in a network namespace of its own that has only a loopback interface (``unshare
--net``, which needs root): the fuzzer invents webhook URLs, and whatever it invents, the
worker can reach nothing but this machine's own loopback. PostgreSQL is reached through its
Unix socket and a private Redis server is started inside the namespace.

Operations that would destroy the fuzzer's own key or account (revoking or rotating API keys,
removing or demoting members, suspending customers) run in a second pass with keys made for
them, so the first pass keeps its credentials to the end.

Every operation must be reached with valid input: ``setup_data`` seeds what each one needs (a
department and tickets, nodes with the agent's token, a plan with prices, invoices, a card...),
scripts/schemathesis-objects.toml pins their ids, and scripts/fuzz_hooks.py counts the answers.
The run ends with a report of how many cases of each operation got a 2xx (also in
var/fuzz/coverage.txt) and fails when one never did, unless NEVER_2XX lists it with its reason.
The database is dropped and re-created: its name must contain ``fuzz``.
"""

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = ROOT / ".venv" / "bin"
REPORT_DIR = ROOT / "var" / "fuzz"
PORT = 8765
REDIS_PORT = 6379
BASE_URL = f"http://127.0.0.1:{PORT}"
# The real node agent of the node the fuzzer's "on a node" server and bot are placed on: their
# files are its (the agent works on their folders; the console and transfers are its too).
AGENT_PORT = 8766
AGENT_URL = f"http://127.0.0.1:{AGENT_PORT}"
# What the file manager's fetch-from-URL fetches: a plain HTTP server of its own (not gunicorn,
# whose workers may all be waiting on the agent's fetch).
DOWNLOADS_PORT = 8767
# A file the agent finds in the node server's folder, for reading, copying and renaming.
SEED_FILES = {
    "fuzz.txt": b"motd=Fuzzed\n",
    "fuzz-rename.txt": b"renamed once\n",
    # What chmod changes (to any mode the fuzzer draws), so that fuzz.txt stays readable.
    "fuzz-mode.txt": b"mode\n",
}

# The second pass: operations that revoke, rotate, demote, remove or suspend.
DESTRUCTIVE_OPERATIONS = [
    "api_keys_destroy",
    "api_keys_rotate_create",
    "account_members_destroy",
    "account_members_partial_update",
    "admin_customers_suspend_create",
]


# Left out of the stateful pass: DELETE revokes an invitation rather than removing it (CONTRACT
# §3: a revoked resource answers 200 in its new state and stays readable), which the stateful
# phase's use-after-free check takes for a deleted resource still served. (API keys behave the
# same and are in the destructive pass, which has no stateful phase.) The other passes fuzz it.
REVOKED_NOT_DELETED = ["account_invitations_destroy"]

# Operations that no fuzz run can bring to a 2xx, with the reason. Every other operation of the
# live schema must be answered with a 2xx at least once over the passes (examples, coverage,
# fuzzing, stateful, destructive), or the run fails; one listed here that does get a 2xx fails
# it too, so the list cannot outlive its reason. Keep it short: seed what an operation needs
# (setup_data) and pin it (scripts/schemathesis-objects.toml) instead.
NEVER_2XX: dict[str, str] = {
    # Saving, removing and choosing cards, and the SetupIntent a browser saves one with, are
    # Stripe's (live API calls); the fuzz run has no Stripe account (STRIPE_* unset: 4xx
    # `payment_not_supported`). Listing and reading a saved card are fuzzed (a card is seeded).
    "payment_methods_create": "needs Stripe",
    "payment_methods_destroy": "needs Stripe",
    "payment_methods_default_create": "needs Stripe",
    "payment_methods_setup_intents_create": "needs Stripe",
}


def log(message: str) -> None:
    print(f"== fuzz: {message}", flush=True)


def isolate() -> None:
    """Re-run this script inside a new network namespace whose only interface is loopback."""
    if os.environ.get("FUZZ_ISOLATED") == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        return
    if shutil.which("unshare") is None or os.geteuid() != 0:
        sys.exit(
            "The fuzzer runs in a network namespace of its own (unshare --net), which needs root "
            "and util-linux's unshare; run it as root."
        )
    env = {**os.environ, "FUZZ_ISOLATED": "1"}
    command = ["unshare", "--net", "--", sys.executable, __file__, *sys.argv[1:]]
    sys.exit(subprocess.run(command, env=env, check=False).returncode)


def server_env(database_url: str) -> dict[str, str]:
    """Production settings, but plain HTTP on loopback and a budget the fuzzer cannot spend."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DEBUG", "DATABASE_URL", "REDIS_URL"}
    }
    env.update(
        DATABASE_URL=database_url,
        REDIS_URL=f"redis://127.0.0.1:{REDIS_PORT}/0",
        ALLOWED_HOSTS="127.0.0.1,localhost",
        SECURE_SSL_REDIRECT="false",
        SESSION_COOKIE_SECURE="false",
        CSRF_COOKIE_SECURE="false",
        RATE_LIMIT_PER_MINUTE="1000000",
        RATE_LIMIT_ANON_PER_MINUTE="1000000",
        RATE_LIMIT_SQLITE_PATH=str(REPORT_DIR / "ratelimit.sqlite3"),
        SIMULATED_DRIVER_DELAY_SECONDS="0",
        GUNICORN_BIND=f"127.0.0.1:{PORT}",
        WEB_CONCURRENCY="2",
        GUNICORN_LOG_LEVEL="warning",
        LOG_LEVEL="WARNING",
        EMAIL_CONSOLE_ALLOWED="true",  # invitations the fuzzer sends go nowhere
        # Every "back up now" the fuzzer sends is kept: rotation would delete the seeded backups
        # the other backup operations are pinned to.
        BACKUP_DEFAULT_LIMIT="100000",
        BACKUP_DEFAULT_STORAGE_MB="10000000",
        # Likewise every schedule it creates: the limit would turn later creates into 409s.
        SCHEDULE_DEFAULT_LIMIT="100000",
        DATABASE_DEFAULT_LIMIT="100000",
        # Webhook URLs on loopback are allowed: the namespace, not the URL rules, is what keeps
        # every delivery on this machine, and the fuzzer's endpoints can then be created.
        WEBHOOKS_ALLOW_HTTP="true",
        WEBHOOKS_ALLOW_PRIVATE_TARGETS="true",
        # The file manager fetches from the fuzzer's own server, on loopback.
        FILES_PULL_ALLOW_PRIVATE="true",
    )
    return env


def reset_database(database_url: str) -> None:
    """Drop and create the run's database. Its name must say it is the fuzzer's (``fuzz`` in it),
    so that a URL pointed at another database (CI's ``hosting``, a developer's) is refused
    rather than dropped."""
    import psycopg

    name = database_url.rsplit("/", 1)[1].split("?")[0]
    if "fuzz" not in name:
        raise SystemExit(
            f"The fuzzer drops and re-creates its database: {name!r} does not look like one made "
            "for it (its name must contain 'fuzz', as the default hosting_fuzz does)."
        )
    with psycopg.connect(database_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def wait_until_up(url: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass  # not up yet, or still loading on its first request (a slow machine)
        if time.monotonic() > deadline:
            raise SystemExit(f"{url} did not answer within {seconds:.0f} s")
        time.sleep(0.3)


def seed_node_server(folder: Path, seconds: float = 60) -> None:
    """Once the agent has made the folder of a server or bot on the node (when the worker's
    create reaches it), put SEED_FILES in it, owned as the folder is."""
    deadline = time.monotonic() + seconds
    while not folder.is_dir():
        if time.monotonic() > deadline:
            sys.exit(f"The fuzzer's agent never made {folder} (var/fuzz/agent.log).")
        time.sleep(0.2)
    owner = folder.stat()
    seeds = SEED_FILES | {"fuzz.tar.gz": _tar_gz({"unpacked/hello.txt": b"hello\n"})}
    for name, content in seeds.items():
        path = folder / name
        path.write_bytes(content)
        os.chown(path, owner.st_uid, owner.st_gid)


def wait_for_hello(token: str, node_id: str, seconds: float = 60) -> None:
    """Until the node's agent has said hello (staff API: ``agent.last_seen_at``)."""
    deadline = time.monotonic() + seconds
    request = urllib.request.Request(
        f"{BASE_URL}/v1/admin/nodes/{node_id}", headers={"Authorization": f"Bearer {token}"}
    )
    while time.monotonic() < deadline:
        with (
            contextlib.suppress(urllib.error.URLError, OSError, ValueError, KeyError),
            urllib.request.urlopen(request, timeout=5) as answer,
        ):
            if json.load(answer)["data"]["node"]["agent"]["last_seen_at"]:
                return
        time.sleep(0.2)
    sys.exit("The fuzzer's agent never said hello (var/fuzz/agent.log).")


def api_call(token: str, method: str, path: str, body: dict | None = None) -> dict:
    """One call to the fuzzer's control plane; its ``data``."""
    request = urllib.request.Request(
        f"{BASE_URL}{path}",
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)["data"]


def real_backup(token: str, kind: str, instance_id: str, seconds: float = 180) -> str:
    """A completed backup of the server or bot on the node, made by its agent through the API
    once the worker has installed it (or failed to: a Minecraft download has no network in the
    namespace); its id. What the backup operations are pinned to, so that a restore finds its
    archive."""
    deadline = time.monotonic() + seconds
    base = f"/v1/{kind}s/{instance_id}"
    while api_call(token, "GET", base)[kind]["status"] in ("provisioning", "installing"):
        if time.monotonic() > deadline:
            sys.exit(f"The fuzzer's {kind} on the node was never installed (var/fuzz/*.log).")
        time.sleep(0.5)
    backup_id = api_call(token, "POST", f"{base}/backups", {"name": "Fuzz"})["backup"]["id"]
    while (status := api_call(token, "GET", f"{base}/backups/{backup_id}")["backup"]["status"]) == (
        "running"
    ):
        if time.monotonic() > deadline:
            break
        time.sleep(0.3)
    if status != "completed":
        sys.exit(f"The fuzzer's backup of its {kind} on the node ended {status} (agent.log).")
    return backup_id


def delete_agent_servers(agent_root: Path, token: str) -> None:
    """Delete every server the fuzzer's agent holds through its API, as the control plane
    would: the agent kills their processes and removes their cgroups and folders."""
    try:
        held = json.loads((agent_root / "state.json").read_text())["servers"]
    except (OSError, ValueError, KeyError):
        return
    for server_id in held:
        request = urllib.request.Request(
            f"{AGENT_URL}/api/servers/{server_id}",
            method="DELETE",
            headers={"Authorization": f"Bearer {token}"},
        )
        with contextlib.suppress(urllib.error.URLError, OSError):
            urllib.request.urlopen(request, timeout=30).close()


def setup_data() -> None:
    """(Run inside Django.) The fuzzer's accounts, keys and one of every object; prints JSON:
    the two tokens and the ids schemathesis is given for path parameters (FUZZ_* variables
    read by scripts/schemathesis.toml), so that operations reach real objects, not only 404s."""
    import django

    django.setup()
    from accounts.actors import SYSTEM, Actor
    from accounts.models import Account
    from accounts.roles import ALL_SCOPES, Role
    from accounts.services import (
        account_create,
        api_key_create,
        invitation_accept_as_new_user,
        invitation_create,
    )
    from events.models import Event
    from servers.models import Action
    from servers.services import bot_create, server_create
    from servers.services.instances import bot_source_upload
    from servers.services.nodes import node_allocations_add, node_create
    from stripe_gateway.models import PaymentMethod
    from webhooks.services import endpoint_create, endpoint_send_test

    def staff_account(name: str, email: str) -> tuple[Account, object]:
        account = account_create(name=name, owner_email=email, owner_password="fuzz-password-1")
        owner = account.memberships.get().user
        owner.is_staff = True
        owner.save(update_fields=["is_staff"])
        account.max_servers = account.max_bots = 1000
        account.max_memory_mb = 10_000_000
        account.max_api_keys = 1000
        account.unbilled_instances = 2000  # the fuzzer makes servers and bots without plans
        account.unbilled_memory_mb = account.unbilled_disk_mb = 10_000_000
        account.unbilled_cpu_percent = 10_000_000
        account.save()
        return account, owner

    def full_key(account, user, name: str) -> tuple[str, str]:
        api_key, token = api_key_create(
            account=account, user=user, name=name, scopes=list(ALL_SCOPES)
        )
        return api_key.id, token

    def member(account, owner, email: str, role: str):
        _, token = invitation_create(
            account=account, email=email, role=role, actor=Actor(user=owner)
        )
        membership = invitation_accept_as_new_user(
            token=token, name="Fuzz member", password="fuzz-password-2", actor=SYSTEM
        )
        return membership.user

    main, main_owner = staff_account("Fuzz Hosting", "fuzz@example.com")
    actor = Actor(user=main_owner)

    def minecraft(name: str, region: str):
        """A Minecraft server of the main account (EULA accepted)."""
        return server_create(
            account=main,
            actor=actor,
            name=name,
            game="minecraft-java",
            region=region,
            variables={"EULA": True},
        )

    def python_bot(name: str, region: str, token_tail: str):
        """A Python bot of the main account, its Discord token ending in ``token_tail``."""
        return bot_create(
            account=main,
            actor=actor,
            name=name,
            region=region,
            runtime="python-3.13",
            start_command="python bot.py",
            token=f"fuzz-discord-bot-token-{token_tail}",
        )

    server = minecraft("Fuzz SMP", "eu-central")
    bot = python_bot("Fuzz bot", "eu-central", "0123456789")
    action = Action.objects.filter(server=server).first()  # its "create"
    # What DELETE /v1/servers/{id} and /v1/bots/{id} are pinned to: the fuzzer reuses ids it saw
    # in lists, and deleting the server of a plan ends its subscription.
    spare_server = minecraft("Fuzz SMP to delete", "eu-central")
    spare_bot = python_bot("Fuzz bot to delete", "eu-central", "0123456780")
    # A node with its token (the agent endpoints' credential) in a region of its own, so that
    # the fuzzer's servers in eu-central stay on the simulated driver; a server and a bot on it
    # (their consoles; the bot's uploaded code is what the agent downloads), and a node that
    # staff may delete.
    node, node_token = node_create(
        name="fuzz-node-1",
        region="us-east",
        agent_url=AGENT_URL,
        memory_mb=1_000_000,
        disk_mb=10_000_000,
        cpu_percent=25_600,
        actor=actor,
    )
    node_allocations_add(node=node, ip="127.0.0.1", ports="30000-30099", actor=actor)
    spare_node, rotated_node = (
        node_create(
            name=name,
            region="us-east",
            agent_url="http://127.0.0.1:9",
            memory_mb=1024,
            disk_mb=1024,
            cpu_percent=100,
            maintenance=True,
            actor=actor,
        )[0]
        for name in ("fuzz-node-2", "fuzz-node-3")
    )
    node_server = minecraft("Fuzz SMP on a node", "us-east")
    node_bot = python_bot("Fuzz bot on a node", "us-east", "9876543210")
    node_bot = bot_source_upload(
        bot=node_bot,
        filename="bot.tar.gz",
        content=_tar_gz({"bot.py": b"print('hi')\n"}),
        actor=actor,
    )
    endpoint, _ = endpoint_create(
        account=main, url="http://127.0.0.1:9/hook", enabled_events=["*"], actor=actor
    )
    delivery = endpoint_send_test(endpoint=endpoint, actor=actor)
    pending, _ = invitation_create(
        account=main, email="invited@example.com", role=Role.VIEWER, actor=actor
    )
    teammate = member(main, main_owner, "teammate@example.com", Role.DEVELOPER)
    _, main_token = full_key(main, main_owner, "Fuzzer")

    spare, spare_owner = staff_account("Fuzz Spare Hosting", "fuzz-spare@example.com")
    victim_key_id, _ = full_key(spare, spare_owner, "Revoked by the fuzzer")
    rotated_key_id, _ = full_key(spare, spare_owner, "Rotated by the fuzzer")
    victim_member = member(spare, spare_owner, "victim@example.com", Role.DEVELOPER)
    victim_customer = account_create(name="Suspended by the fuzzer", owner_email="v@example.com")
    _, spare_token = full_key(spare, spare_owner, "Fuzzer (destructive pass)")
    books = billing_setup(main, actor)
    # A card as Stripe would have saved it (saving one takes Stripe: see NEVER_2XX), to read.
    card = PaymentMethod.objects.create(
        account=main,
        stripe_id="pm_fuzz_card",
        brand="visa",
        last4="4242",
        exp_month=12,
        exp_year=2040,
        is_default=True,
    )
    desk = support_setup(main, main_owner, actor)
    sftp = sftp_setup(main_owner, actor)
    backups = backups_setup(node_server, node_bot)
    schedules = schedules_setup(server, bot, actor)
    allocations = allocations_setup(node_server, actor)
    databases = databases_setup(server, bot, actor)
    users = users_setup(server, bot, teammate, actor)
    games = games_setup(actor)
    print(
        json.dumps(
            {
                "main": main_token,
                "destructive": spare_token,
                "ids": {
                    "FUZZ_SERVER_ID": server.id,
                    "FUZZ_BOT_ID": bot.id,
                    "FUZZ_ACTION_ID": action.id,
                    "FUZZ_EVENT_ID": Event.objects.filter(account=main).first().id,
                    "FUZZ_WEBHOOK_ID": endpoint.id,
                    "FUZZ_DELIVERY_ID": delivery.id,
                    "FUZZ_INVITATION_ID": pending.id,
                    "FUZZ_MEMBER_ID": teammate.id,
                    "FUZZ_API_KEY_ID": victim_key_id,
                    "FUZZ_ROTATED_API_KEY_ID": rotated_key_id,
                    "FUZZ_SPARE_SERVER_ID": spare_server.id,
                    "FUZZ_SPARE_BOT_ID": spare_bot.id,
                    "FUZZ_VICTIM_MEMBER_ID": victim_member.id,
                    "FUZZ_VICTIM_CUSTOMER_ID": victim_customer.id,
                    "FUZZ_NODE_ID": node.id,
                    "FUZZ_SPARE_NODE_ID": spare_node.id,
                    "FUZZ_ROTATE_NODE_ID": rotated_node.id,
                    "FUZZ_NODE_TOKEN": node_token,
                    "FUZZ_NODE_SERVER_ID": node_server.id,
                    "FUZZ_NODE_BOT_ID": node_bot.id,
                    "FUZZ_PAYMENT_METHOD_ID": card.id,
                    **books,
                    **desk,
                    **sftp,
                    **backups,
                    **schedules,
                    **allocations,
                    **databases,
                    **users,
                    **games,
                },
            }
        )
    )


def backups_setup(node_server, node_bot) -> dict[str, str]:
    """(Inside Django.) A completed backup of the server and of the bot on the node, as the
    agent's reports leave them, for the delete (the agent answers 204 for an archive that is
    not there). The ones to read, lock, download and restore are real (``real_backup``)."""
    from servers.models import Backup

    def completed(instance, name: str) -> str:
        return Backup.objects.create(
            account=instance.account,
            node=instance.node,
            **{instance.kind: instance},
            name=name,
            status="completed",
            size=1024,
            checksum="sha256:" + "0" * 64,
            files=1,
            storage_kind="node",
        ).id

    return {
        "FUZZ_DELETED_BACKUP_ID": completed(node_server, "Deleted by the fuzzer"),
        "FUZZ_DELETED_BOT_BACKUP_ID": completed(node_bot, "Deleted by the fuzzer"),
    }


# A game that runs nothing, for the staff API's game operations (the fuzzer's servers and plans
# are of minecraft-java, which those operations only read). Its create's body is pinned to the
# same template and variables in scripts/schemathesis-objects.toml (tests/test_fuzz_pins.py).
FUZZ_GAME_TEMPLATE = {
    "install_script": "echo installed",
    "start_command": "echo {{MOTD}}; exec sleep 3600",
    "ready_pattern": "ready",
    "stop_command": "",
    "stop_signal": "SIGTERM",
    "stop_timeout_seconds": 10,
    "ready_timeout_seconds": 60,
    "backup_commands": {"before": [], "after": []},
}
FUZZ_GAME_VARIABLES = [
    {"key": "MOTD", "name": "Message of the day", "type": "string", "default": "Fuzzed"}
]
FUZZ_EGG_UUID = "5f0e2d1c-9b8a-4c7d-8e6f-0a1b2c3d4e5f"


def games_setup(actor) -> dict[str, str]:
    """(Inside Django.) Games of the staff API that no server uses: one to change (the fuzzer's
    servers and plans are of minecraft-java, which is only read), one to remove, and an egg (our
    export of such a game, with a uuid) for the import, whose first case adds a game and the
    next ones update it (the same uuid)."""
    from servers.services.games import game_create, game_export

    def made(slug: str, name: str):
        return game_create(
            slug=slug,
            name=name,
            default_port=27015,
            template=FUZZ_GAME_TEMPLATE,
            variables=FUZZ_GAME_VARIABLES,
            actor=actor,
        )

    changed = made("fuzz-changed", "Changed by the fuzzer")
    removed = made("fuzz-removed", "Removed by the fuzzer")
    egg = game_export(changed) | {"name": "Imported by the fuzzer", "uuid": FUZZ_EGG_UUID}
    return {
        "FUZZ_SPARE_GAME_ID": changed.slug,
        "FUZZ_DELETED_GAME_ID": removed.slug,
        "FUZZ_EGG": json.dumps(egg),
    }


def users_setup(server, bot, teammate, actor) -> dict[str, str]:
    """(Inside Django.) Sub-users of the fuzz server and bot: the teammate's grant on each, to
    read and change, an invited e-mail's grant on each to delete, and an e-mail no one invited
    yet that the creates are pinned to (the first is invited, the next are 409 `conflict`)."""
    from servers.services.grants import grant_create

    def granted(instance, email: str) -> str:
        return grant_create(
            instance=instance, email=email, permissions=["console.view"], actor=actor
        ).id

    return {
        "FUZZ_GRANT_ID": granted(server, teammate.email),
        "FUZZ_DELETED_GRANT_ID": granted(server, "sub-user-removed@example.com"),
        "FUZZ_BOT_GRANT_ID": granted(bot, teammate.email),
        "FUZZ_DELETED_BOT_GRANT_ID": granted(bot, "bot-sub-user-removed@example.com"),
        "FUZZ_SUB_USER_EMAIL": "sub-user@example.com",
    }


def schedules_setup(server, bot, actor) -> dict[str, str]:
    """(Inside Django.) A schedule of the server and of the bot to read, change, run and list
    the runs of, and one each for the delete. Their task is a console command: running one
    changes nothing the other operations are pinned to (on the simulated driver it fails, and
    the run is recorded failed)."""
    from servers.services.schedules import schedule_create

    def made(instance, name: str) -> str:
        tasks = [{"action": "command", "payload": "say fuzz", "offset_seconds": 0}]
        return schedule_create(
            instance=instance, actor=actor, name=name, cron="0 4 * * *", tasks=tasks
        ).id

    return {
        "FUZZ_SCHEDULE_ID": made(server, "Fuzz schedule"),
        "FUZZ_DELETED_SCHEDULE_ID": made(server, "Deleted by the fuzzer"),
        "FUZZ_BOT_SCHEDULE_ID": made(bot, "Fuzz bot schedule"),
        "FUZZ_DELETED_BOT_SCHEDULE_ID": made(bot, "Deleted by the fuzzer"),
    }


def allocations_setup(node_server, actor) -> dict[str, str]:
    """(Inside Django.) The node's server may hold 10 allocations (its node has 100 ports): an
    additional one to change and one to remove, so that their operations reach a 2xx; adding
    takes a free port of the node until the plan's limit (then 409 allocation_limit_reached)."""
    from servers.services.allocations import allocation_add

    node_server.plan = {**(node_server.plan or {}), "allocation_limit": 10}
    node_server.save(update_fields=["plan"])
    return {
        "FUZZ_ALLOCATION_ID": allocation_add(server=node_server, actor=actor).public_id,
        "FUZZ_DELETED_ALLOCATION_ID": allocation_add(server=node_server, actor=actor).public_id,
    }


def databases_setup(server, bot, actor) -> dict[str, str]:
    """(Inside Django.) A database host: the run's own PostgreSQL, reached as the run's database
    is, through its Unix socket (the network namespace has no MariaDB); and a database of the
    server and of the bot on it to read and rotate, and one each to delete; two more hosts on
    it for the staff API to change and to remove. What the run makes there is dropped when it
    ends (``drop_fuzz_databases``)."""
    from django.conf import settings

    from databases.services import database_create, database_host_create

    database = settings.DATABASES["default"]
    where = {
        "engine": "postgresql",
        "host": database["HOST"],
        "port": int(database["PORT"] or 5432),
        "admin_user": database["USER"],
        "admin_password": database["PASSWORD"] or "",
    }
    main_host = database_host_create(name="Fuzz PostgreSQL", **where)
    # Staff's API: one to change (inactive, so the customers' creates stay on the main one
    # whatever the fuzzer sets on it), one to remove (it holds no database).
    spare_host = database_host_create(name="Changed by the fuzzer", active=False, **where)
    removed_host = database_host_create(name="Removed by the fuzzer", active=False, **where)

    def made(instance, name: str) -> str:
        return database_create(instance=instance, name=name, actor=actor, engine="postgresql")[0].id

    return {
        "FUZZ_DATABASE_ID": made(server, "fuzz"),
        "FUZZ_DELETED_DATABASE_ID": made(server, "fuzz_deleted"),
        "FUZZ_BOT_DATABASE_ID": made(bot, "fuzz"),
        "FUZZ_DELETED_BOT_DATABASE_ID": made(bot, "fuzz_deleted"),
        "FUZZ_DATABASE_HOST_ID": main_host.id,
        "FUZZ_SPARE_DATABASE_HOST_ID": spare_host.id,
        "FUZZ_DELETED_DATABASE_HOST_ID": removed_host.id,
        # What a staff create is pinned to: the same PostgreSQL (its port is pinned as 5432).
        "FUZZ_DATABASE_HOST_ADDRESS": where["host"],
        "FUZZ_DATABASE_HOST_USER": where["admin_user"],
        "FUZZ_DATABASE_HOST_PASSWORD": where["admin_password"],
    }


def drop_fuzz_databases(database_url: str, instance_ids: list[str]) -> None:
    """Drop the databases and users the run made on its PostgreSQL for its instances (named
    ``s<8>_…`` and ``b<8>_…`` after their ids, as databases/services.py names them)."""
    import psycopg
    from psycopg import sql

    prefixes = [
        ("s" if i.startswith("srv_") else "b") + i.split("_", 1)[1][:8].lower() + "\\_%"
        for i in instance_ids
    ]
    with psycopg.connect(database_url, dbname="postgres", autocommit=True) as connection:
        for query, statement in (
            (
                "SELECT datname FROM pg_database WHERE datname LIKE ANY(%s)",
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            ),
            ("SELECT rolname FROM pg_roles WHERE rolname LIKE ANY(%s)", "DROP ROLE IF EXISTS {}"),
        ):
            for (name,) in connection.execute(query, (prefixes,)).fetchall():
                connection.execute(sql.SQL(statement).format(sql.Identifier(name)))


def _tar_gz(files: dict[str, bytes]) -> bytes:
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def sftp_setup(owner, actor) -> dict[str, str]:
    """(Run inside Django, from ``setup_data``.) The fuzzer's user's SFTP login and SSH keys: one
    to read, one to delete, and a key not yet added (what creating one is pinned to), so that
    /v1/profile/ssh-keys reaches past its 400s and 404s. Returns the FUZZ_* values of
    scripts/schemathesis-objects.toml."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    from accounts.services import sftp_login_change, ssh_key_create

    def public_key() -> str:
        key = ed25519.Ed25519PrivateKey.generate().public_key()
        line = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        return line.decode()

    sftp_login_change(user=owner, login="fuzz", actor=actor)
    kept, spare = (
        ssh_key_create(user=owner, name=name, public_key=public_key(), actor=actor)
        for name in ("Fuzz laptop", "Fuzz key to delete")
    )
    return {
        "FUZZ_SSH_KEY_ID": kept.id,
        "FUZZ_SPARE_SSH_KEY_ID": spare.id,
        "FUZZ_NEW_SSH_PUBLIC_KEY": public_key(),
        "FUZZ_SFTP_LOGIN": "fuzz",
    }


def support_setup(main, owner, actor) -> dict[str, str]:
    """(Run inside Django, from ``setup_data``.) The desk: a department the fuzzer's staff user
    works (customers may pick it), and tickets of the main account, one per operation that
    uses its ticket up (closed, reopened, rated, merged into another), so that the others keep
    reaching an open one. Returns the FUZZ_* ids of scripts/schemathesis-objects.toml."""
    from support.models import Attachment, Channel, Priority
    from support.services.attachments import Upload
    from support.services.departments import department_save
    from support.services.tickets import (
        Requester,
        ticket_close,
        ticket_open,
        ticket_status_change,
    )

    department = department_save(
        department=None,
        name="Fuzz Technical",
        email="",
        default_priority=Priority.NORMAL,
        sla_policy=None,
        customer_visible=True,
        active=True,
        members=[owner],
        actor=actor,
    )
    requester = Requester(email=owner.email, name="Fuzz", user=owner, account=main)

    def ticket(subject: str, uploads=None):
        opened, _ = ticket_open(
            requester=requester,
            subject=subject,
            body="The server does not start.",
            department=department,
            channel=Channel.API,
            actor=actor,
            uploads=uploads,
        )
        return opened

    tickets = {
        f"FUZZ_{use}_TICKET_ID": ticket(f"Fuzz ticket ({use.lower()})")
        for use in ("CLOSE", "REOPEN", "RATE", "MERGE", "MERGE_INTO", "STATUS", "STAFF_REPLY")
    }
    log_file = Upload(filename="server.log", content=b"[12:00:01] Server stopped.\n")
    tickets["FUZZ_OPEN_TICKET_ID"] = ticket("Fuzz ticket (open)", uploads=[log_file])
    attachment = Attachment.objects.get(message__ticket=tickets["FUZZ_OPEN_TICKET_ID"])
    ticket_close(ticket=tickets["FUZZ_RATE_TICKET_ID"], actor=actor)
    # Customers reopen what staff resolved (a closed ticket stays closed).
    ticket_status_change(
        ticket=tickets["FUZZ_REOPEN_TICKET_ID"], status="resolved", actor=actor, by_staff=True
    )
    ids = {"FUZZ_DEPARTMENT_ID": department.id, "FUZZ_STAFF_USER_ID": str(owner.id)}
    ids["FUZZ_ATTACHMENT_ID"] = attachment.id
    return ids | {name: opened.id for name, opened in tickets.items()}


def billing_setup(main, actor) -> dict[str, str]:
    """(Run inside Django, from ``setup_data``.) The main account's books, made through the
    billing services as a customer and staff would: a plan with prices, subscriptions paid from
    credit, invoices in each state, a credit note, a coupon with codes, a tax rate; and a
    customer on a test clock. Returns the FUZZ_* ids of scripts/schemathesis-objects.toml.

    An operation that uses its object up (archive, cancel, void, pay, mark paid or
    uncollectible, deactivate) or changes what others rely on (a plan's games, regions and
    kind) is given one of its own, so that the operations reading or changing the others keep
    reaching a live object to the end of the run."""
    from django.utils import timezone

    from accounts.actors import SYSTEM
    from accounts.services import account_create
    from billing.clock import billing_clock_advance
    from billing.models import BalanceTransaction, Payment
    from billing.services import (
        balance_change,
        credit_note_create,
        invoice_create,
        invoice_finalize,
    )
    from billing.services.catalogue import (
        coupon_create,
        price_create,
        product_create,
        promotion_code_create,
        tax_rate_create,
    )
    from billing.services.profile import BillingProfileChanges, billing_profile_update
    from billing.services.subscriptions import subscription_order

    tax_rate = tax_rate_create(country="DE", percentage="19", actor=SYSTEM)
    billing_profile_update(
        account=main,
        actor=actor,
        changes=BillingProfileChanges(
            legal_name="Fuzz Hosting GmbH",
            address_line1="Hauptstraße 5",
            postal_code="10115",
            city="Berlin",
            country="DE",
        ),
    )
    plan = {"kind": "server", "memory_mb": 1024, "cpu_percent": 100, "disk_mb": 5120}
    product = product_create(name="Fuzz 1 GB", games=["minecraft-java"], **plan, actor=SYSTEM)
    price, upgrade, other, to_archive = (
        price_create(
            product=product, currency="EUR", unit_amount=amount, interval="month", actor=SYSTEM
        )
        for amount in (500, 900, 1500, 700)
    )
    to_edit, to_archive_product = (
        product_create(name=name, **plan, actor=SYSTEM)
        for name in ("Fuzz plan to edit", "Fuzz plan to archive")
    )
    coupon = coupon_create(
        name="Fuzz 10 %",
        percent_off="10",
        duration="repeating",
        duration_in_months=3,
        actor=SYSTEM,
    )
    spare_coupon = coupon_create(
        name="Fuzz 1 EUR", amount_off=100, currency="EUR", duration="once", actor=SYSTEM
    )
    # Named, not pinned by id, in scripts/schemathesis-objects.toml (the orders' code).
    promotion_code_create(coupon=coupon, code="FUZZ10", actor=SYSTEM)
    spare_code = promotion_code_create(coupon=coupon, code="FUZZ-SPARE", actor=SYSTEM)
    topup = balance_change(
        account=main,
        amount=10_000_000,
        currency="EUR",
        kind=BalanceTransaction.Kind.ADJUSTMENT,
        description="Credit to fuzz with",
        actor=SYSTEM,
    )
    order = {
        "name": "Fuzz plan",
        "region": "eu-central",
        "game": "minecraft-java",
        "variables": {"EULA": True},
    }
    subscription, paid = subscription_order(account=main, price=price, order=order, actor=actor)
    to_cancel, staff_cancel = (
        subscription_order(
            account=main, price=price, order=order, promotion_code="FUZZ10", actor=actor
        )[0]
        for _ in range(2)
    )
    line = {"description": "Extra backup storage", "quantity": 1, "unit_amount": 300}
    uses = ("PAY", "MARK_PAID", "VOID", "UNCOLLECTIBLE")
    open_invoices = {
        f"FUZZ_{use}_INVOICE_ID": invoice_finalize(
            invoice=invoice_create(account=main, currency="EUR", lines=[line])
        ).id
        for use in uses
    }
    credit_note = credit_note_create(
        invoice=paid,
        amount=100,
        reason="product_unsatisfactory",
        refund_to="balance",
        memo="A day of downtime.",
        actor=SYSTEM,
    )
    clocked = account_create(name="Fuzz test-clock customer", owner_email="clock@example.com")
    billing_clock_advance(account=clocked, to=timezone.now())
    return {
        "FUZZ_ACCOUNT_ID": main.id,
        "FUZZ_CLOCK_CUSTOMER_ID": clocked.id,
        "FUZZ_TAX_RATE_ID": tax_rate.id,
        "FUZZ_PRODUCT_ID": product.id,
        "FUZZ_EDITED_PRODUCT_ID": to_edit.id,
        "FUZZ_SPARE_PRODUCT_ID": to_archive_product.id,
        "FUZZ_PRICE_ID": price.id,
        "FUZZ_UPGRADE_PRICE_ID": upgrade.id,
        "FUZZ_OTHER_PRICE_ID": other.id,
        "FUZZ_SPARE_PRICE_ID": to_archive.id,
        "FUZZ_COUPON_ID": coupon.id,
        "FUZZ_SPARE_COUPON_ID": spare_coupon.id,
        "FUZZ_SPARE_PROMOTION_CODE_ID": spare_code.id,
        "FUZZ_BALANCE_TRANSACTION_ID": topup.id,
        "FUZZ_SUBSCRIPTION_ID": subscription.id,
        "FUZZ_CANCEL_SUBSCRIPTION_ID": to_cancel.id,
        "FUZZ_STAFF_CANCEL_SUBSCRIPTION_ID": staff_cancel.id,
        "FUZZ_PAID_INVOICE_ID": paid.id,
        "FUZZ_PAYMENT_ID": Payment.objects.get(invoice=paid).id,
        "FUZZ_CREDIT_NOTE_ID": credit_note.id,
        **open_invoices,
    }


def pinned_config() -> Path:
    """scripts/schemathesis.toml with the pinned objects of scripts/schemathesis-objects.toml."""
    config = REPORT_DIR / "schemathesis-pinned.toml"
    scripts = ROOT / "scripts"
    config.write_text(
        (scripts / "schemathesis.toml").read_text()
        + "\n"
        + (scripts / "schemathesis-objects.toml").read_text()
    )
    return config


def schemathesis(
    token: str,
    ids: dict,
    args,
    *,
    phases: str,
    config: Path,
    include: list[str] | None,
    exclude: list[str],
    tag: str,
) -> int:
    command = [
        str(VENV_BIN / "st"),
        "--config-file",
        str(config),
        "run",
        f"{BASE_URL}/v1/openapi.json",
        "--checks",
        "all",
        "--header",
        f"Authorization: Bearer {token}",
        "--seed",
        str(args.seed),
        "--max-examples",
        str(args.max_examples),
        "--workers",
        "2",
        "--phases",
        phases,
        "--generation-database",
        "none",
        "--suppress-health-check",
        "all",
        "--request-timeout",
        "30",
        "--no-color",
        "--report",
        "junit",
        "--report-dir",
        str(REPORT_DIR / tag),
    ]
    if args.max_time:
        command += ["--max-time", str(args.max_time)]
    for operation in include or []:
        command += ["--include-operation-id", operation]
    for operation in exclude:
        command += ["--exclude-operation-id", operation]
    log(f"schemathesis, {tag} pass ({phases})")
    env = {
        **os.environ,
        **ids,
        "SCHEMATHESIS_HOOKS": str(ROOT / "scripts" / "fuzz_hooks.py"),
        "FUZZ_COVERAGE_FILE": str(REPORT_DIR / f"coverage-{tag}.json"),
    }
    return subprocess.run(command, env=env, check=False).returncode


def operation_ids() -> list[str]:
    """Every operation of the live schema."""
    with urllib.request.urlopen(f"{BASE_URL}/v1/openapi.json", timeout=30) as response:
        schema = json.load(response)
    return sorted(
        operation["operationId"]
        for item in schema["paths"].values()
        for method, operation in item.items()
        if method in {"get", "put", "post", "patch", "delete"}
    )


def coverage_report(operations: list[str], tags: list[str]) -> int:
    """Per operation, the cases sent and how many got a 2xx (counted by scripts/fuzz_hooks.py
    over every pass); 1 when an operation never got one (NEVER_2XX aside) or when a listed one
    did. Written to var/fuzz/coverage.txt as well."""
    counts: dict[str, dict[str, int]] = {operation: {} for operation in operations}
    for tag in tags:
        path = REPORT_DIR / f"coverage-{tag}.json"
        if not path.exists():
            continue
        for operation, statuses in json.loads(path.read_text()).items():
            merged = counts.setdefault(operation, {})
            for status, count in statuses.items():
                merged[status] = merged.get(status, 0) + count
    lines, unreached, stale = [], [], []
    for operation in sorted(counts):
        statuses = counts[operation]
        cases = sum(statuses.values())
        ok = sum(count for status, count in statuses.items() if status.startswith("2"))
        others = " ".join(f"{status}:{count}" for status, count in sorted(statuses.items()))
        mark = "  "
        if ok == 0 and operation not in NEVER_2XX:
            unreached.append(operation)
            mark = "!!"
        elif ok and operation in NEVER_2XX:
            stale.append(operation)
            mark = "!!"
        lines.append(f"{mark} {ok:6d} 2xx of {cases:6d}  {operation}  ({others or 'never called'})")
    text = "\n".join(lines)
    (REPORT_DIR / "coverage.txt").write_text(text + "\n")
    log("2xx answers per operation (all passes):")
    print(text, flush=True)
    for operation in unreached:
        log(f"{operation} never got a 2xx: seed what it needs (setup_data) or list it in NEVER_2XX")
    for operation in stale:
        log(f"{operation} got a 2xx although NEVER_2XX lists it: take it off the list")
    return 1 if unreached or stale else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-examples", type=int, default=25, help="Cases per operation.")
    parser.add_argument("--seed", type=int, default=20261123)
    parser.add_argument("--max-time", type=int, default=0, help="Seconds per pass (0: none).")
    parser.add_argument(
        "--phases",
        default="examples,coverage,fuzzing,stateful",
        help="Schemathesis phases (stateful chains calls through the links it infers).",
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "FUZZ_DATABASE_URL", "postgres://postgres@%2Fvar%2Frun%2Fpostgresql/hosting_fuzz"
        ),
        help="A PostgreSQL database the run may drop and create (reached from the namespace: "
        "a Unix socket).",
    )
    parser.add_argument("--setup", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.setup:
        setup_data()
        return 0
    isolate()
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    env = server_env(args.database_url)
    processes: list[subprocess.Popen] = []
    agent_root: Path | None = None
    ids: dict[str, str] = {}
    failed = 1

    def start(command: list[str], **kwargs) -> subprocess.Popen:
        kwargs.setdefault("env", env)
        kwargs.setdefault("cwd", ROOT)
        process = subprocess.Popen(command, start_new_session=True, **kwargs)
        processes.append(process)
        return process

    try:
        start(
            [
                "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(REDIS_PORT),
                "--save",
                "",
                "--appendonly",
                "no",
                "--logfile",
                str(REPORT_DIR / "redis.log"),
            ],
        )
        reset_database(args.database_url)
        python = str(VENV_BIN / "python")
        subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        subprocess.run(
            [python, "manage.py", "catalogue_sync"],
            cwd=ROOT,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        tokens = json.loads(
            subprocess.run(
                [python, __file__, "--setup"],
                cwd=ROOT,
                env={**env, "DJANGO_SETTINGS_MODULE": "hosting.settings", "PYTHONPATH": str(ROOT)},
                check=True,
                stdout=subprocess.PIPE,
                text=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        # Standard output carries the e-mails the fuzzer's invitations print (console mail);
        # errors and tracebacks go to standard error, shown with the run.
        with open(REPORT_DIR / "gunicorn-stdout.log", "w") as mail_log:
            start(
                [str(VENV_BIN / "gunicorn"), "hosting.wsgi", "-c", "gunicorn.conf.py"],
                stdout=mail_log,
            )
        wait_until_up(f"{BASE_URL}/healthz")
        ids = tokens["ids"]
        agent_root = Path(tempfile.mkdtemp(prefix="hms-fuzz-agent-"))
        agent_root.chmod(0o711)  # the servers' own users walk through it to their folders
        with open(REPORT_DIR / "agent.log", "w") as agent_log:
            start(
                [python, "-m", "agent"],
                env={
                    "PATH": env.get("PATH", "/usr/bin:/bin"),
                    "AGENT_TOKEN": ids["FUZZ_NODE_TOKEN"],
                    "AGENT_NODE_ID": ids["FUZZ_NODE_ID"],
                    "AGENT_CONTROL_PLANE_URL": BASE_URL,
                    "AGENT_LISTEN": f"127.0.0.1:{AGENT_PORT}",
                    "AGENT_DATA_ROOT": str(agent_root),
                    # Root with bubblewrap sandboxes the servers; elsewhere they run as is.
                    "AGENT_ALLOW_UNISOLATED": "1",
                    "AGENT_PULL_ALLOW_PRIVATE": "1",
                },
                stdout=agent_log,
                stderr=subprocess.STDOUT,
            )
        downloads = REPORT_DIR / "downloads"
        downloads.mkdir(exist_ok=True)
        (downloads / "plugin.jar").write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip
        start(
            [python, "-m", "http.server", str(DOWNLOADS_PORT), "--bind", "127.0.0.1"],
            cwd=downloads,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # The worker's first calls to the agent (the node server's create) need its hello done.
        wait_for_hello(tokens["main"], ids["FUZZ_NODE_ID"])
        with open(REPORT_DIR / "worker.log", "w") as worker_log:
            start(
                [python, "manage.py", "db_worker", "--no-reload"],
                stdout=worker_log,
                stderr=subprocess.STDOUT,
            )
        for on_node in ("FUZZ_NODE_SERVER_ID", "FUZZ_NODE_BOT_ID"):
            seed_node_server(agent_root / "servers" / ids[on_node])
        ids["FUZZ_BACKUP_ID"] = real_backup(tokens["main"], "server", ids["FUZZ_NODE_SERVER_ID"])
        ids["FUZZ_BOT_BACKUP_ID"] = real_backup(tokens["main"], "bot", ids["FUZZ_NODE_BOT_ID"])
        started = time.monotonic()
        for old in REPORT_DIR.glob("coverage-*.json"):
            old.unlink()
        operations = operation_ids()
        pinned, plain = pinned_config(), ROOT / "scripts" / "schemathesis.toml"
        phases = args.phases.split(",")
        fuzzing = ",".join(phase for phase in phases if phase != "stateful")
        failed = 0
        if fuzzing:
            failed |= schemathesis(
                tokens["main"],
                ids,
                args,
                phases=fuzzing,
                config=pinned,
                include=None,
                exclude=DESTRUCTIVE_OPERATIONS,
                tag="main",
            )
        if "stateful" in phases:
            failed |= schemathesis(
                tokens["main"],
                ids,
                args,
                phases="stateful",
                config=plain,
                include=None,
                exclude=DESTRUCTIVE_OPERATIONS + REVOKED_NOT_DELETED,
                tag="stateful",
            )
        failed |= schemathesis(
            tokens["destructive"],
            ids,
            args,
            phases=fuzzing or "fuzzing",
            config=pinned,
            include=DESTRUCTIVE_OPERATIONS,
            exclude=[],
            tag="destructive",
        )
        failed |= coverage_report(operations, ["main", "stateful", "destructive"])
        log(f"schemathesis took {time.monotonic() - started:.0f} s")
    finally:
        if agent_root is not None:
            delete_agent_servers(agent_root, ids["FUZZ_NODE_TOKEN"])
        if "FUZZ_SERVER_ID" in ids:
            drop_fuzz_databases(args.database_url, [ids["FUZZ_SERVER_ID"], ids["FUZZ_BOT_ID"]])
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        if agent_root is not None:
            shutil.rmtree(agent_root, ignore_errors=True)
    log("passed" if not failed else "FAILED (reports in var/fuzz/)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
