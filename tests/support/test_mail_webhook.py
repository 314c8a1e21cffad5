"""The second door for mail: django-anymail's inbound webhook, here as Mailgun calls it (a
signed form post carrying the raw message). The message is taken as the pipe command takes it;
an unsigned or unauthenticated post writes nothing."""

import base64
import hashlib
import hmac
import time

import pytest

from support.models import Message, Ticket
from tests.support.test_mail import eml

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.support.inbound_urls")]
SIGNING_KEY = "mailgun-signing-key-for-tests"
BASIC = "desk:webhook-password"
URL = "/anymail/mailgun/inbound_mime/"


@pytest.fixture(autouse=True)
def anymail(settings, technical, billing_department):
    settings.SUPPORT_REPLY_ADDRESS = "support@desk.example"
    settings.ANYMAIL = {"WEBHOOK_SECRET": BASIC, "MAILGUN_WEBHOOK_SIGNING_KEY": SIGNING_KEY}


def signed(raw: bytes, *, key: str = SIGNING_KEY) -> dict[str, str]:
    timestamp, token = str(int(time.time())), "a" * 50
    signature = hmac.new(key.encode(), f"{timestamp}{token}".encode(), hashlib.sha256).hexdigest()
    return {
        "body-mime": raw.decode("utf-8"),
        "timestamp": timestamp,
        "token": token,
        "signature": signature,
        "recipient": "billing@desk.example",
    }


def auth(credentials: str = BASIC) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(credentials.encode()).decode()}


def test_a_signed_inbound_post_opens_a_ticket(client, billing_department):
    answer = client.post(URL, signed(eml("new_plain")), **auth())

    assert answer.status_code == 200
    ticket = Ticket.objects.get()
    assert (ticket.department, ticket.channel) == (billing_department, "email")
    assert ticket.requester_email == "anna.schmidt@example.com"


def test_the_same_message_posted_twice_is_one_message(client):
    client.post(URL, signed(eml("new_plain")), **auth())
    again = client.post(URL, signed(eml("new_plain")), **auth())

    assert again.status_code == 200  # taken: the provider must not retry it
    assert Message.objects.count() == 1


def test_a_wrong_signature_writes_nothing(client):
    answer = client.post(URL, signed(eml("new_plain"), key="forged"), **auth())

    assert answer.status_code == 400
    assert not Ticket.objects.exists()


def test_a_post_without_the_basic_auth_writes_nothing(client):
    answer = client.post(URL, signed(eml("new_plain")), **auth("desk:guess"))

    assert answer.status_code == 400
    assert not Ticket.objects.exists()


def test_the_webhook_is_not_mounted_without_its_secret(client, settings):
    from hosting import urls

    assert not settings.SUPPORT_INBOUND_WEBHOOK
    assert not any(str(each.pattern) == "anymail/" for each in urls.urlpatterns)
