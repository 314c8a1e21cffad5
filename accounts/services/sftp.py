"""A user's SFTP credentials: SSH keys, the SFTP password and the login name.

They are the user's own, not an account's: every change is recorded (``ssh_key.*``,
``user.sftp_*``) in each account the user belongs to, as ``user.updated`` is. Which server a
credential opens, and with which rights, is the servers app's question
(``servers.services.sftp``); this module only says whether a credential is the user's.

Keys are parsed by ``cryptography`` (``load_ssh_public_key``), never by pattern alone: ed25519,
ECDSA (P-256, P-384, P-521) and RSA of at least 2,048 bits; their fingerprint is OpenSSH's
(``SHA256:`` and the unpadded base64 of the SHA-256 of the key's blob).
"""

import base64
import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from functools import cache

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from django.contrib.auth.hashers import check_password, make_password
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from accounts.actors import Actor
from accounts.models import Account, SshKey, User
from accounts.representations import profile_representation, ssh_key_representation
from accounts.services.accounts import account_lock
from events.services import record_event
from hosting.errors import QuotaExceeded, ValidationFailed

MAX_SSH_KEYS_PER_USER = 50
MIN_RSA_BITS = 2048
MAX_PUBLIC_KEY_LENGTH = 16_384
MAX_SFTP_PASSWORD_LENGTH = 1024
LAST_USED_WRITE_INTERVAL = timedelta(seconds=60)

# The login's rules: 3 to 32 characters of lowercase letters, digits, "-", "_" and ".",
# beginning and ending with a letter or digit (the agent splits the SSH user name at its last
# dot, so a login may hold dots; ending with one would make "alice..Ab3dE6gH").
LOGIN_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9._-]{1,30})[a-z0-9]$")
# Marked for the translators (the dashboard's form shows it translated); the API's text is English.
LOGIN_RULES = gettext_noop(
    "3 to 32 characters: lowercase letters, digits, '-', '_' and '.', beginning and ending "
    "with a letter or digit."
)
LOGIN_MIN, LOGIN_MAX = 3, 32


@cache
def _dummy_hash() -> str:
    """A hash of a random password nobody knows: an unknown login, or a user without an SFTP
    password, is checked against it, so that it answers as slowly as a wrong password does."""
    return make_password(secrets.token_urlsafe(32))


@dataclass(frozen=True)
class ParsedKey:
    key_type: str
    bits: int
    public_key: str  # "<type> <base64>"
    fingerprint: str


def ssh_fingerprint(blob: bytes) -> str:
    """OpenSSH's SHA256 fingerprint of a key's wire blob (``ssh-keygen -l``)."""
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    return f"SHA256:{digest}"


def ssh_key_parse(text: str, *, field: str = "public_key") -> ParsedKey:
    """Parse one OpenSSH public key line (``ssh-ed25519 AAAA… comment``); raise
    ``validation_failed`` on ``field`` for anything else or a key too weak."""
    text = text.strip()
    if not text:
        raise ValidationFailed.field(field, "required", _("Paste an SSH public key."))
    if len(text) > MAX_PUBLIC_KEY_LENGTH or "\n" in text or "\r" in text:
        raise ValidationFailed.field(
            field, "invalid", _("Paste one public key, on one line (the contents of a .pub file).")
        )
    if text.startswith("-----BEGIN"):
        raise ValidationFailed.field(
            field,
            "private_key",
            _("That is a private key: never share it. Paste the public key (the .pub file)."),
        )
    parts = text.split()
    if len(parts) < 2 or not parts[0].startswith(("ssh-", "ecdsa-", "sk-")):
        raise ValidationFailed.field(field, "invalid", _("This is not an SSH public key."))
    try:
        key = serialization.load_ssh_public_key(f"{parts[0]} {parts[1]}".encode())
    except UnsupportedAlgorithm:
        raise ValidationFailed.field(
            field,
            "unsupported_type",
            _("Keys of type %(type)s are not supported: use ed25519, ECDSA or RSA.")
            % {"type": repr(parts[0][:40])},
        ) from None
    except ValueError:
        raise ValidationFailed.field(
            field, "invalid", _("This is not an SSH public key.")
        ) from None
    if isinstance(key, rsa.RSAPublicKey):
        bits = key.key_size
        if bits < MIN_RSA_BITS:
            raise ValidationFailed.field(
                field,
                "weak_key",
                _("This RSA key has %(bits)s bits; at least %(min)s are needed (or use ed25519).")
                % {"bits": bits, "min": MIN_RSA_BITS},
            )
    elif isinstance(key, ec.EllipticCurvePublicKey):
        bits = key.key_size
    elif isinstance(key, ed25519.Ed25519PublicKey):
        bits = 256
    else:
        raise ValidationFailed.field(
            field, "unsupported_type", _("Only ed25519, ECDSA and RSA keys are supported.")
        )
    line = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    key_type, blob = line.decode().split(" ", 1)
    return ParsedKey(
        key_type=key_type,
        bits=bits,
        public_key=f"{key_type} {blob}",
        fingerprint=ssh_fingerprint(base64.b64decode(blob)),
    )


def _locked(user: User) -> User:
    """The user re-read under a lock, taken after their accounts' (``account_lock``'s order:
    the events of the change are written in each of them). ``NO KEY UPDATE``: rows that refer
    to the user (an event's actor, a key) may still be written meanwhile."""
    account_lock(*_account_ids(user))
    return User.objects.select_for_update(no_key=True).get(pk=user.pk)


def _account_ids(user: User) -> list[str]:
    return list(
        Account.objects.filter(memberships__user=user).order_by("pk").values_list("pk", flat=True)
    )


def _record(user: User, event_type: str, obj: dict, actor: Actor, object_type: str) -> None:
    """Record a change of the user's own credentials in each of their accounts."""
    for account in Account.objects.filter(memberships__user=user).order_by("pk"):
        record_event(
            type=event_type, account=account, object_type=object_type, obj=obj, actor=actor
        )


@transaction.atomic
def ssh_key_create(*, user: User, name: str, public_key: str, actor: Actor) -> SshKey:
    """Register an SSH public key for ``user`` (at most ``MAX_SSH_KEYS_PER_USER``, each once)."""
    name = name.strip()
    parsed = ssh_key_parse(public_key)
    if not name:
        # The key's comment, as ssh-keygen writes it (user@host), else its type.
        parts = public_key.strip().split(maxsplit=2)
        name = parts[2].strip() if len(parts) == 3 else parsed.key_type
    if len(name) > 100:
        raise ValidationFailed.field(
            "name", "max_length", _("A key name has at most 100 characters.")
        )
    _locked(user)  # serializes the count
    keys = SshKey.objects.filter(user=user)
    if keys.filter(fingerprint=parsed.fingerprint).exists():
        raise ValidationFailed.field(
            "public_key",
            "duplicate",
            _("You have already added this key (%(fingerprint)s).")
            % {"fingerprint": parsed.fingerprint},
        )
    if keys.count() >= MAX_SSH_KEYS_PER_USER:
        raise QuotaExceeded(
            _("You already have %(limit)s SSH keys, the limit; delete one first.")
            % {"limit": MAX_SSH_KEYS_PER_USER},
            details={"limit": MAX_SSH_KEYS_PER_USER},
        )
    ssh_key = SshKey.objects.create(
        user=user,
        name=name,
        key_type=parsed.key_type,
        bits=parsed.bits,
        public_key=parsed.public_key,
        fingerprint=parsed.fingerprint,
    )
    _record(user, "ssh_key.created", ssh_key_representation(ssh_key), actor, "ssh_key")
    return ssh_key


@transaction.atomic
def ssh_key_delete(*, ssh_key: SshKey, actor: Actor) -> None:
    """Delete (revoke) a key: the next SFTP sign-in with it is refused, and a session signed
    in with it is closed at its next check (the agent asks again every minute)."""
    _locked(ssh_key.user)
    obj = ssh_key_representation(ssh_key)
    ssh_key.delete()
    _record(ssh_key.user, "ssh_key.deleted", obj, actor, "ssh_key")


def sftp_password_validate(*, user: User, password: str) -> None:
    """The account password's rules (``AUTH_PASSWORD_VALIDATORS``), on the ``password`` field."""
    if len(password) > MAX_SFTP_PASSWORD_LENGTH:
        raise ValidationFailed.field(
            "password",
            "max_length",
            _("A password has at most %(length)s characters.")
            % {"length": MAX_SFTP_PASSWORD_LENGTH},
        )
    try:
        validate_password(password, user)
    except ValidationError as errors:
        first = errors.error_list[0]
        raise ValidationFailed(
            " ".join(errors.messages),
            details={
                "fields": [
                    {"name": "password", "code": error.code or "invalid", "message": message}
                    for error, message in zip(errors.error_list, errors.messages, strict=True)
                ]
            },
        ) from first


@transaction.atomic
def sftp_password_set(*, user: User, password: str, actor: Actor) -> User:
    """Set or replace the user's SFTP password (hashed; never shown again)."""
    sftp_password_validate(user=user, password=password)
    user = _locked(user)
    user.sftp_password = make_password(password)
    user.sftp_password_set_at = timezone.now()
    user.save(update_fields=["sftp_password", "sftp_password_set_at"])
    _record(user, "user.sftp_password_set", _user_obj(user), actor, "user")
    return user


@transaction.atomic
def sftp_password_remove(*, user: User, actor: Actor) -> User:
    """Remove the SFTP password: only keys sign in to SFTP from now on."""
    user = _locked(user)
    if not user.sftp_password:
        return user
    user.sftp_password, user.sftp_password_set_at = "", None
    user.save(update_fields=["sftp_password", "sftp_password_set_at"])
    _record(user, "user.sftp_password_removed", _user_obj(user), actor, "user")
    return user


def _user_obj(user: User) -> dict:
    """What an event about a user's SFTP credentials carries: no secret."""
    profile = profile_representation(user)
    return {key: profile[key] for key in ("id", "email", "sftp_login", "sftp_password_set")}


def login_clean(login: str) -> str:
    """``login`` if it follows the rules (``LOGIN_RULES``); raise on the ``sftp_login`` field."""
    if not isinstance(login, str) or not LOGIN_PATTERN.match(login):
        raise ValidationFailed.field(
            "sftp_login", "invalid", _("An SFTP login has %(rules)s") % {"rules": _(LOGIN_RULES)}
        )
    return login


def _login_from_email(email: str) -> str:
    """The e-mail's local part made a login: before any ``+tag``, lowercased, other characters
    dropped, trimmed to the rules (``user`` when nothing is left)."""
    local = email.split("@", 1)[0].split("+", 1)[0].lower()
    login = re.sub(r"[^a-z0-9._-]", "", local)
    login = re.sub(r"^[._-]+|[._-]+$", "", login)[: LOGIN_MAX - 4]
    login = re.sub(r"[._-]+$", "", login)
    return login if len(login) >= LOGIN_MIN else (login + "user")[: LOGIN_MAX - 4]


def sftp_login_of(user: User) -> str:
    """The user's SFTP login, given the first time it is asked for (from the e-mail's local
    part, with a number added when another user has it) and kept after, e-mail changes too."""
    if user.sftp_login:
        return user.sftp_login
    base = _login_from_email(user.email)
    for attempt in range(1, 1000):
        candidate = base if attempt == 1 else f"{base}{attempt}"
        if User.objects.filter(sftp_login=candidate).exists():
            continue
        try:
            with transaction.atomic():
                updated = User.objects.filter(pk=user.pk, sftp_login=None).update(
                    sftp_login=candidate
                )
        except IntegrityError:  # taken in between
            continue
        if not updated:  # given by another request in between
            given = User.objects.values_list("sftp_login", flat=True).get(pk=user.pk)
            if given:
                user.sftp_login = given
                return given
            continue
        user.sftp_login = candidate
        return candidate
    raise ValidationFailed.field("sftp_login", "unavailable", _("No SFTP login could be chosen."))


@transaction.atomic
def sftp_login_change(*, user: User, login: str, actor: Actor) -> User:
    """Change the user's SFTP login (``LOGIN_RULES``; unique): the old one stops at once."""
    login = login_clean(login)
    user = _locked(user)
    if user.sftp_login == login:
        return user
    if User.objects.filter(sftp_login=login).exclude(pk=user.pk).exists():
        raise ValidationFailed.field("sftp_login", "unique", _("Another user has this SFTP login."))
    previous = user.sftp_login
    user.sftp_login = login
    try:
        with transaction.atomic():
            user.save(update_fields=["sftp_login"])
    except IntegrityError:
        raise ValidationFailed.field(
            "sftp_login", "unique", _("Another user has this SFTP login.")
        ) from None
    for account in Account.objects.filter(memberships__user=user).order_by("pk"):
        record_event(
            type="user.sftp_login_changed",
            account=account,
            object_type="user",
            obj=_user_obj(user),
            actor=actor,
            previous_attributes={"sftp_login": previous},
        )
    return user


def sftp_user_for_login(login: str) -> User | None:
    """The active user whose SFTP login this is, or None."""
    if not LOGIN_PATTERN.match(login):
        return None
    return User.objects.filter(sftp_login=login, is_active=True).first()


def sftp_credential_check(
    *, user: User | None, public_key: str | None = None, password: str | None = None
) -> bool:
    """Is this the user's SSH key, or their SFTP password? Read from the database each time
    (a deleted key or a changed password is refused at once); a key's use is noted, at most
    once a minute. ``user`` None is checked too, against nothing, as slowly as a real one."""
    if public_key is not None:
        try:
            parsed = ssh_key_parse(public_key)
        except ValidationFailed:
            return False
        if user is None:
            return False
        ssh_key = SshKey.objects.filter(user=user, fingerprint=parsed.fingerprint).first()
        if ssh_key is None or ssh_key.public_key != parsed.public_key:
            return False
        now = timezone.now()
        if ssh_key.last_used_at is None or now - ssh_key.last_used_at >= LAST_USED_WRITE_INTERVAL:
            SshKey.objects.filter(pk=ssh_key.pk).update(last_used_at=now)
        return True
    if password is not None:
        encoded = user.sftp_password if user is not None and user.sftp_password else _dummy_hash()
        # check_password hashes and compares in constant time; the dummy never matches.
        matches = check_password(password, encoded)
        return matches and user is not None and bool(user.sftp_password)
    return False
