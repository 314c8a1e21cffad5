"""The desk's mail reads in each recipient's language (their Profile's choice); an address no
user has, a customer who wrote in by mail, reads it in English. Recipients of different
languages get one mail per language, the same headers each."""

import pytest
from django.utils import translation

from support.services import notifications
from tests.support.test_mail_out import desk, send_desk_mail, to_customers, to_staff  # noqa: F401
from tests.support.test_tickets import open_ticket, reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def languages(monkeypatch) -> list[str]:
    """The language each mail's body was rendered in, in the order they were rendered."""
    rendered: list[str] = []
    original = notifications.render_to_string

    def render(*args, **kwargs):
        body = original(*args, **kwargs)
        rendered.append(translation.get_language())
        return body

    monkeypatch.setattr(notifications, "render_to_string", render)
    return rendered


def test_each_customer_reads_the_reply_in_their_language_one_mail_per_language(
    owner, teammate, account, technical, agent, languages
):
    owner.language = "de"
    owner.save(update_fields=["language"])
    ticket = open_ticket(owner, account, technical, cc=[teammate.email])
    send_desk_mail().clear()
    languages.clear()

    message = reply(ticket, agent, "Restarted it for you.", staff=True)
    sent = to_customers(send_desk_mail())

    assert [each.to for each in sent] == [[owner.email], [teammate.email]]
    assert languages == ["de", "en"]
    assert {each.extra_headers["Message-ID"] for each in sent} == {
        notifications.message_id_header(message)
    }
    assert all("Restarted it for you." in each.body for each in sent)


def test_staff_hear_of_a_new_ticket_in_their_language(owner, account, technical, agent, languages):
    agent.language = "fr"
    agent.save(update_fields=["language"])
    open_ticket(owner, account, technical)

    [notice] = to_staff(send_desk_mail())

    assert notice.to == [agent.email]
    assert languages[-1] == "fr"


def test_an_address_no_user_has_reads_english_and_case_does_not_matter(owner, teammate):
    owner.language = "es"
    owner.save(update_fields=["language"])

    groups = notifications._by_language(
        [owner.email.upper(), "guest@elsewhere.example", teammate.email]
    )

    assert groups == [
        (owner, [owner.email.upper()]),
        (None, ["guest@elsewhere.example", teammate.email]),
    ]
