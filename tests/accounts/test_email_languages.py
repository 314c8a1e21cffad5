"""Account e-mails are written in their recipient's language (hosting.i18n.in_language_of): the
lockout and new-device notices, the invitation (the invited user's language, else the language
the invitation was sent in), the password reset (the person's choice, else the page's)."""

from unittest import mock

import pytest
from django.core import mail
from django.template import loader
from django.utils import translation

from accounts.actors import Actor
from accounts.models import Membership
from accounts.roles import Role
from accounts.services import invitation_create
from accounts.services.users import lockout_notify, sign_in_record
from tests.factories import AccountFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def languages_rendered(monkeypatch):
    """The active language each time an e-mail template is rendered, by template name."""
    seen: dict[str, str] = {}
    render = loader.render_to_string

    def recording(template_name, *args, **kwargs):
        seen[template_name] = translation.get_language()
        return render(template_name, *args, **kwargs)

    for module in ("accounts.services.users", "accounts.services.team"):
        monkeypatch.setattr(f"{module}.render_to_string", recording)
    return seen


def test_the_lockout_and_new_device_mails_are_in_the_recipients_language(languages_rendered):
    user = UserFactory(language="de")

    with translation.override("fr"):
        lockout_notify(email=user.email, retry_after=120, ip="192.0.2.1")
        sign_in_record(user=user, ip="192.0.2.1", user_agent="Firefox", new_device=True)

    assert languages_rendered == {
        "accounts/email/lockout.txt": "de",
        "accounts/email/new_device.txt": "de",
    }
    assert len(mail.outbox) == 2
    body = mail.outbox[0].body
    assert body.startswith("Hallo ") and "Ihrem Konto" in body  # the German catalogue's text


def test_a_person_without_a_choice_gets_english(languages_rendered):
    user = UserFactory(language="")

    with translation.override("es"):
        lockout_notify(email=user.email, retry_after=60, ip=None)

    assert languages_rendered == {"accounts/email/lockout.txt": "en"}
    assert "about 1 minute." in mail.outbox[0].body


@pytest.mark.parametrize(("invitee_language", "expected"), [("es", "es"), (None, "fr")])
def test_an_invitation_is_in_the_invited_users_language_else_the_inviters(
    languages_rendered, django_capture_on_commit_callbacks, invitee_language, expected
):
    account = AccountFactory()
    owner = Membership.objects.create(account=account, user=UserFactory(), role=Role.OWNER).user
    if invitee_language:
        UserFactory(email="guest@example.com", language=invitee_language)

    with translation.override("fr"), django_capture_on_commit_callbacks(execute=True):
        invitation_create(
            account=account, email="guest@example.com", role=Role.VIEWER, actor=Actor(user=owner)
        )

    assert languages_rendered == {"accounts/email/invitation.txt": expected}
    # The subject in that language too (each catalogue's own words).
    assert (
        mail.outbox[0].subject
        == {
            "es": f"Le han invitado a {account.name}",
            "fr": f"Vous êtes invité à rejoindre {account.name}",
        }[expected]
    )


def test_the_password_reset_mail_is_in_the_persons_language(client):
    UserFactory(email="reset@example.com", language="de")
    languages = []
    render = loader.render_to_string

    def recording(template_name, *args, **kwargs):
        languages.append(translation.get_language())
        return render(template_name, *args, **kwargs)

    with mock.patch("django.contrib.auth.forms.loader.render_to_string", recording):
        response = client.post("/password/reset", {"email": "reset@example.com"})

    assert response.status_code == 302
    assert languages and set(languages) == {"de"}
    with translation.override("de"):
        german = translation.gettext("Reset your Hosting Management password")
    assert german != "Reset your Hosting Management password"  # the catalogue has it
    assert mail.outbox[0].subject == german
