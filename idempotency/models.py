from django.db import models
from django.utils import timezone

from accounts.keys import KEY_ID_LENGTH


class IdempotencyRecord(models.Model):
    """One ``Idempotency-Key`` an API key sent with a POST, and the answer that request got.

    Keys are scoped to the API key that sent them (``api_key_id`` is the key id of its token).
    While ``response_status`` is empty the first request is still running; afterwards the record
    holds what a retry is answered with. ``response_body`` is encrypted under a key derived from
    the caller's token, which the service never stores: a database dump cannot reveal what a
    response carried (the one-time token of a new API key, for one). ``required_scopes`` are the
    scopes the endpoint required, checked again against the caller's rights on every replay.
    """

    api_key_id = models.CharField(max_length=KEY_ID_LENGTH)
    key = models.CharField(max_length=255)
    request_method = models.CharField(max_length=8)
    request_path = models.TextField(help_text="Path and query string.")
    request_body_sha256 = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_headers = models.JSONField(default=dict)
    response_body = models.BinaryField(default=b"")
    required_scopes = models.JSONField(
        null=True,
        blank=True,
        help_text="The scopes the endpoint required, which a replay's caller must hold; null on "
        "records kept before scopes were (those are never replayed).",
    )
    created_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["api_key_id", "key"], name="idempotency_key_unique_per_api_key"
            )
        ]
        indexes = [models.Index(fields=["created_at"], name="idempotency_created")]

    def __str__(self) -> str:
        return f"{self.key} (hms_{self.api_key_id}…)"

    @property
    def is_completed(self) -> bool:
        return self.response_status is not None
