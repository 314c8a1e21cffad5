"""What a test's ``Client.force_login`` stands for: a whole sign-in, just now.

Django's ``force_login`` skips the sign-in form, so django-allauth's records of how the session
signed in (what the second-factor policies and the sensitive actions' re-authentication read,
accounts/second_factor.py) would be empty: every staff page would ask for a factor and every
sensitive action for the password again. tests/conftest.py installs this in its place for the
whole run: ``force_login(user)`` (and ``login(...)``) records a password typed now and, unless
``second_factor=False``, a second factor typed now, as the real sign-in would for a person
with one. The policies' own tests sign in through the real forms (or pass
``second_factor=False``).
"""

import time

from allauth.account.internal.flows.login import (
    _AUTHENTICATION_METHODS_USER_SESSION_KEY,
    AUTHENTICATION_METHODS_SESSION_KEY,
)
from allauth.account.internal.userkit import user_id_to_str
from django.test import Client

_django_force_login = Client.force_login
_django_login = Client.login


def force_login(self, user, backend=None, *, second_factor: bool = True) -> None:
    _django_force_login(self, user, backend)
    _record_sign_in(self, user, second_factor=second_factor)


def login(self, **credentials) -> bool:
    """Django's ``Client.login`` (credentials checked, no form): the same records."""
    from django.contrib.auth import get_user

    signed_in = _django_login(self, **credentials)
    if signed_in:
        request = type("Request", (), {"session": self.session})()
        _record_sign_in(self, get_user(request), second_factor=True)
    return signed_in


def _record_sign_in(self, user, *, second_factor: bool) -> None:
    now = time.time()
    records = [{"method": "password", "at": now, "reauthenticated": True}]
    if second_factor:
        records.append({"method": "mfa", "at": now, "type": "totp"})
    session = self.session
    session[AUTHENTICATION_METHODS_SESSION_KEY] = records
    session[_AUTHENTICATION_METHODS_USER_SESSION_KEY] = user_id_to_str(user)
    session.save()


def install() -> None:
    Client.force_login = force_login  # type: ignore[method-assign]
    Client.login = login  # type: ignore[method-assign]
