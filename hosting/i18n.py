"""The dashboard in the person's language; the API in English.

Languages: English (the source), German, French and Spanish (``LANGUAGES``). A page is shown in
the language the person chose in Profile (``User.language``); when they chose none, or nobody is
signed in, in the browser's (the language cookie set by the sign-in page's picker, then
``Accept-Language``), else English.

The API under ``/v1`` stays in English whatever the request says: its error codes are the
contract, and its messages are written for the developer reading a log, so a client's
``Accept-Language`` never changes what a program parses (DRF ships its own translations, which
Django's locale middleware would otherwise switch on). E-mails go out in the recipient's
language (``language_of``), and PDFs in the language of the page that asked for them.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.middleware.locale import LocaleMiddleware
from django.utils import translation

API_PREFIX = "/v1/"


class LanguageMiddleware(LocaleMiddleware):
    """Django's locale middleware, with the person's own choice first and the API in English.

    It runs after authentication (it reads ``request.user``)."""

    def process_request(self, request):
        if request.path.startswith(API_PREFIX):
            translation.activate(settings.LANGUAGE_CODE)
            request.LANGUAGE_CODE = translation.get_language()
            return
        chosen = language_of(getattr(request, "user", None))
        if chosen:
            translation.activate(chosen)
            request.LANGUAGE_CODE = translation.get_language()
            return
        super().process_request(request)

    def process_response(self, request, response):
        if request.path.startswith(API_PREFIX):
            return response  # no Vary: Accept-Language on the API's answers, which never vary by it
        return super().process_response(request, response)


def language_of(user) -> str | None:
    """The language a person chose in Profile, or None (then the browser's, or English)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    chosen = getattr(user, "language", "")
    return chosen if chosen in dict(settings.LANGUAGES) else None


@contextmanager
def in_language_of(user) -> Iterator[None]:
    """Render (an e-mail, a notice) in ``user``'s language: their choice, else English."""
    with translation.override(language_of(user) or settings.LANGUAGE_CODE):
        yield


def stored_text_shown(text: str) -> str:
    """A text stored in English (a payment's failure, a note) in the active language when it is
    one of ours the catalogues know, else as stored. Never ``gettext("")``, which answers the
    catalogue's header."""
    return translation.gettext(text) if text else text
