"""Issue 28: only the configured provider's inbound webhook is mounted
(``SUPPORT_INBOUND_PROVIDER``); every other provider's path is 404, where it used to answer an
anonymous POST with a server error. This module is also the URL conf of its tests: the
service's URLs with the door mounted as hosting/urls.py mounts it for Mailgun."""

import os
import subprocess
import sys

import pytest
from anymail import urls as anymail_urls
from django.core.exceptions import ImproperlyConfigured
from django.urls import include, path

from hosting.urls import urlpatterns as service_urlpatterns
from support.inbound_urls import inbound_webhook_patterns
from support.models import Message, Ticket
from support.services.notifications import reply_address
from tests.support.test_mail_webhook import BASIC, SIGNING_KEY, auth, signed
from tests.support.test_tickets import open_ticket

urlpatterns = [
    *service_urlpatterns,
    path("anymail/", include((inbound_webhook_patterns("mailgun"), "anymail"))),
]
pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]

OTHER_PATHS = sorted(
    {
        "/anymail/" + str(each.pattern).strip("^$").replace("(_mime)?", "")
        for each in anymail_urls.urlpatterns
        if not str(each.pattern).startswith("^mailgun/inbound")
    }
)


@pytest.fixture(autouse=True)
def anymail(settings, technical, billing_department):
    settings.SUPPORT_REPLY_ADDRESS = "support@desk.example"
    settings.SUPPORT_INBOUND_PROVIDER = "mailgun"
    settings.ANYMAIL = {"WEBHOOK_SECRET": BASIC, "MAILGUN_WEBHOOK_SIGNING_KEY": SIGNING_KEY}


@pytest.mark.parametrize("url", OTHER_PATHS)
def test_every_other_providers_path_is_not_found(client, url):
    assert len(OTHER_PATHS) > 20  # anymail's inbound and tracking routes of every provider

    answer = client.post(url, {"anything": "x"})

    assert answer.status_code == 404


@pytest.mark.parametrize("url", ["/anymail/mailgun/inbound/", "/anymail/mailgun/inbound_mime/"])
def test_the_configured_provider_takes_mail(client, url, billing_department):
    raw = (
        b"From: anna@example.com\r\nTo: billing@desk.example\r\nSubject: Refund\r\n"
        b"Message-ID: <webhook-1@example.com>\r\nContent-Type: text/plain\r\n\r\nTwice.\r\n"
    )

    answer = client.post(url, signed(raw), **auth())

    assert answer.status_code == 200
    assert Ticket.objects.get().department == billing_department


def test_an_anonymous_post_to_the_configured_provider_writes_nothing(client):
    answer = client.post("/anymail/mailgun/inbound_mime/", {"body-mime": "From: a@b.example"})

    assert answer.status_code == 400
    assert not Ticket.objects.exists()


def test_the_webhook_gives_no_staff_voice_to_a_spoofed_sender(
    client, owner, account, technical, agent
):
    ticket = open_ticket(owner, account, technical)
    raw = (
        f"From: {agent.email}\r\nTo: {reply_address(ticket)}\r\nSubject: Re: it\r\n"
        "Message-ID: <webhook-spoof@example.com>\r\nContent-Type: text/plain\r\n\r\nRefund.\r\n"
    ).encode()

    answer = client.post("/anymail/mailgun/inbound_mime/", signed(raw), **auth())

    assert answer.status_code == 200  # taken, and refused: the provider must not retry it
    assert not Message.objects.filter(ticket=ticket, from_staff=True).exists()


def test_an_unknown_provider_stops_the_start():
    with pytest.raises(ImproperlyConfigured, match="mailgun"):
        inbound_webhook_patterns("mailgum")


@pytest.mark.parametrize(
    ("variables", "accepted"),
    [
        ({"ANYMAIL_WEBHOOK_SECRET": "desk:pw"}, False),
        ({"SUPPORT_INBOUND_PROVIDER": "mailgun"}, False),
        ({"ANYMAIL_WEBHOOK_SECRET": "desk:pw", "SUPPORT_INBOUND_PROVIDER": "mailgun"}, True),
        ({"SUPPORT_STAFF_SHOWN_AS": "full_name"}, False),
    ],
)
def test_the_settings_refuse_half_a_door(variables, accepted):
    environment = {**os.environ, **variables}
    started = subprocess.run(
        [sys.executable, "-c", "import hosting.settings"],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )

    assert (started.returncode == 0) is accepted, started.stderr


MOUNTED = """
import django
django.setup()
from django.urls import Resolver404, resolve
for url in ("/anymail/mailgun/inbound/", "/anymail/postmark/inbound/",
            "/anymail/mailgun/tracking/"):
    try:
        print(url, resolve(url).namespace)
    except Resolver404:
        print(url, 404)
"""


def test_the_service_mounts_the_configured_provider_and_no_other():
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "hosting.settings",
        "ANYMAIL_WEBHOOK_SECRET": "desk:pw",
        "SUPPORT_INBOUND_PROVIDER": "mailgun",
    }
    started = subprocess.run(  # noqa: S603 - our own interpreter and code
        [sys.executable, "-c", MOUNTED],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )

    assert started.stdout.split("\n")[:3] == [
        "/anymail/mailgun/inbound/ anymail",
        "/anymail/postmark/inbound/ 404",
        "/anymail/mailgun/tracking/ 404",
    ]


def test_a_signed_post_that_is_no_message_is_taken_and_dropped(client):
    answer = client.post(
        "/anymail/mailgun/inbound_mime/", signed(b"Subject: no sender\r\n\r\nhi\r\n"), **auth()
    )

    assert answer.status_code == 200  # dropped: the provider must not retry it
    assert not Ticket.objects.exists()
