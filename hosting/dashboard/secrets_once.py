"""A secret shown exactly once after a post/redirect/get: a new API key's token, a webhook
endpoint's signing secret.

The form's POST hands the secret over through the session and redirects; the next page takes
it out and shows it, and it is gone. It travels encrypted (the session table never holds it in
clear) and only for ``SHOWN_FOR_SECONDS``: a page opened later says it is no longer shown.
"""

from typing import Any

from cryptography.fernet import InvalidToken

from hosting.secrets_box import decrypt_secret, encrypt_secret

SHOWN_FOR_SECONDS = 300


class SecretNoLongerShown(Exception):
    """The page was opened too late; ``context`` is what was handed over beside the secret."""

    def __init__(self, context: dict[str, Any]):
        super().__init__("The secret is no longer shown.")
        self.context = context


def secret_hand_over(request, session_key: str, secret: str, **context: Any) -> None:
    """Keep ``secret`` (encrypted) and ``context`` (plain, for the page) for the next page."""
    request.session[session_key] = {"secret": encrypt_secret(secret), **context}


def secret_take(request, session_key: str) -> dict[str, Any] | None:
    """What was handed over, with ``secret`` in clear, removed from the session; None when there
    is nothing (a reload); ``SecretNoLongerShown`` after ``SHOWN_FOR_SECONDS``."""
    handed = request.session.pop(session_key, None)
    if handed is None:
        return None
    try:
        secret = decrypt_secret(handed.pop("secret"), max_age=SHOWN_FOR_SECONDS)
    except InvalidToken:
        raise SecretNoLongerShown(handed) from None
    return {**handed, "secret": secret}
