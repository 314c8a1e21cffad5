"""The mail that an endpoint was disabled reads in each owner's language (their Profile's
choice, else English), its reason too: one mail per language."""

import pytest
from django.core import mail
from django.utils import translation

from accounts.models import Membership
from accounts.roles import Role
from tests.factories import UserFactory
from tests.webhooks.receiver import Receiver
from tests.webhooks.test_delivery import LOCAL, add_endpoint, delivery_of, new_event
from webhooks.services import delivery as delivery_service
from webhooks.services import webhook_deliver

pytestmark = pytest.mark.django_db


@pytest.fixture
def receiver():
    with Receiver() as running:
        yield running


@LOCAL
def test_each_owner_reads_the_disabled_mail_in_their_language(
    account, owner, receiver, django_capture_on_commit_callbacks, monkeypatch
):
    owner.language = "de"
    owner.save(update_fields=["language"])
    asked: list[tuple[str, str]] = []
    gettext = delivery_service._

    def spy(text):
        asked.append((text, translation.get_language()))
        return gettext(text)

    monkeypatch.setattr(delivery_service, "_", spy)
    endpoint, _secret = add_endpoint(account, receiver)
    first = delivery_of(new_event(account, owner), endpoint)
    receiver.script([410])
    other = UserFactory()
    Membership.objects.create(account=account, user=other, role=Role.OWNER)

    with django_capture_on_commit_callbacks(execute=True):
        webhook_deliver(delivery_id=first.id)

    assert sorted(each.to for each in mail.outbox) == sorted([[owner.email], [other.email]])
    assert ("A webhook endpoint was disabled", "de") in asked
    assert ("The endpoint answered 410 Gone.", "de") in asked
    assert ("A webhook endpoint was disabled", "en") in asked
    by_reader = {each.to[0]: each for each in mail.outbox}
    english = by_reader[other.email]
    assert english.subject == "A webhook endpoint was disabled"
    assert "The endpoint answered 410 Gone." in english.body
    with translation.override("de"):
        subject = translation.gettext("A webhook endpoint was disabled")
        reason = translation.gettext("The endpoint answered 410 Gone.")
    assert subject != "A webhook endpoint was disabled"  # the German catalogue's words
    assert by_reader[owner.email].subject == subject
    assert reason in by_reader[owner.email].body
