"""Idempotent requests: claim a key before the work, keep the answer, give it again on a retry.

Nothing here knows HTTP beyond a status, a few headers and a body; ``idempotency.middleware``
applies it to every POST under ``/v1``.
"""

import base64
import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime, timedelta

from cryptography.fernet import Fernet
from django.db import IntegrityError, transaction
from django.utils import timezone

from hosting.errors import Conflict, IdempotencyKeyReused, IdempotencyRequestInProgress
from idempotency.models import IdempotencyRecord

RETENTION = timedelta(hours=24)
# An unfinished record this old was left by a process that died mid-request (requests are cut
# off long before this), so a retry may take the key over instead of waiting out the retention.
ABANDONED_AFTER = timedelta(minutes=5)
_CLAIM_ATTEMPTS = 3


@dataclass(frozen=True)
class RequestFingerprint:
    """What makes a retry the same request: method, path with query string, body digest."""

    method: str
    path: str
    body_sha256: str

    @classmethod
    def of(cls, *, method: str, path: str, body: bytes) -> "RequestFingerprint":
        return cls(method=method, path=path, body_sha256=hashlib.sha256(body).hexdigest())

    def matches(self, record: IdempotencyRecord) -> bool:
        return (self.method, self.path, self.body_sha256) == (
            record.request_method,
            record.request_path,
            record.request_body_sha256,
        )


@dataclass(frozen=True)
class StoredResponse:
    status: int
    headers: dict[str, str]
    body: bytes
    # What the endpoint required of the first caller; the caller of a replay must hold it too.
    required_scopes: list[str]


def _body_cipher(token: str) -> Fernet:
    """Stored bodies are encrypted under a key derived from the caller's token (never stored)."""
    key = hmac.new(token.encode(), b"idempotency-response-body", hashlib.sha256).digest()
    return Fernet(base64.urlsafe_b64encode(key))


def _is_stale(record: IdempotencyRecord, now: datetime) -> bool:
    age = now - record.created_at
    return age >= RETENTION or (not record.is_completed and age >= ABANDONED_AFTER)


def idempotency_reserve(
    *, api_key_id: str, key: str, fingerprint: RequestFingerprint
) -> tuple[IdempotencyRecord, bool]:
    """Claim ``key`` for a new request: ``(record, True)``, or ``(the holder, False)``.

    The claim is committed in its own transaction before the work starts, and the unique
    constraint on (API key, key) lets only one of two concurrent first requests have it. An
    expired or abandoned holder is deleted and the claim tried again.
    """
    for _ in range(_CLAIM_ATTEMPTS):
        now = timezone.now()
        try:
            with transaction.atomic():
                record = IdempotencyRecord.objects.create(
                    api_key_id=api_key_id,
                    key=key,
                    request_method=fingerprint.method,
                    request_path=fingerprint.path,
                    request_body_sha256=fingerprint.body_sha256,
                    created_at=now,
                )
            return record, True
        except IntegrityError:
            holder = IdempotencyRecord.objects.filter(api_key_id=api_key_id, key=key).first()
        if holder is not None and not _is_stale(holder, now):
            return holder, False
        if holder is not None:
            # Compare and delete: of two retries taking over, only one claim will succeed.
            IdempotencyRecord.objects.filter(pk=holder.pk, created_at=holder.created_at).delete()
    raise IdempotencyRequestInProgress()


def idempotency_replay(
    *, record: IdempotencyRecord, fingerprint: RequestFingerprint, token: str
) -> StoredResponse:
    """The stored answer for a retry of the request that holds ``record``.

    Raises ``idempotency_key_reused`` for a different request with the same key, and
    ``idempotency_request_in_progress`` while the first request is still running. The caller
    must check ``required_scopes`` against the rights of the caller of the replay.

    An answer kept before required scopes were kept cannot be checked, so it is refused
    (``conflict``) rather than given to a caller who may have lost the right to see it, or run
    a second time.
    """
    if not fingerprint.matches(record):
        raise IdempotencyKeyReused()
    status = record.response_status
    if status is None:  # not completed
        raise IdempotencyRequestInProgress()
    if record.required_scopes is None:
        raise Conflict(
            "The first request with this Idempotency-Key was answered before this service "
            "kept the rights an answer needs, so it is not given again; check whether that "
            "request took effect before sending it with a new key."
        )
    return StoredResponse(
        status=status,
        headers=dict(record.response_headers),
        body=_body_cipher(token).decrypt(bytes(record.response_body)),
        required_scopes=list(record.required_scopes),
    )


def idempotency_complete(
    *,
    record: IdempotencyRecord,
    token: str,
    status: int,
    headers: dict[str, str],
    body: bytes,
    required_scopes: list[str],
) -> None:
    """Keep the answer of the request that holds ``record``, and the scopes it needed."""
    IdempotencyRecord.objects.filter(pk=record.pk).update(
        response_status=status,
        response_headers=headers,
        response_body=_body_cipher(token).encrypt(body),
        required_scopes=required_scopes,
        completed_at=timezone.now(),
    )


def idempotency_release(*, record: IdempotencyRecord) -> None:
    """Give the key back without an answer, so that a retry runs the request again."""
    IdempotencyRecord.objects.filter(pk=record.pk, response_status__isnull=True).delete()


def idempotency_prune() -> int:
    """Delete the records past their retention; return how many.

    Run by housekeeping (``idempotency/upkeep.py``), never on a request: a claim only takes
    over its own expired key.
    """
    deleted, _ = IdempotencyRecord.objects.filter(
        created_at__lte=timezone.now() - RETENTION
    ).delete()
    return deleted
