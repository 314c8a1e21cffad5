"""Billing's e-mails in each recipient's language (issue 34 item 15): one e-mail per language
among the recipients, its amounts and dates written the way that language writes them; a
billing profile's address that is no member's in English."""

from datetime import UTC, datetime

import pytest
from django.core import mail

from accounts.roles import Role
from billing.models import BillingProfile
from billing.services.notices import billing_notices_send, recipients, recipients_by_language
from tests.factories import MembershipFactory

pytestmark = pytest.mark.django_db


def payment_received(account) -> dict:
    return {
        "kind": "payment_received",
        "account": account.id,
        "subscription": None,
        "invoice": {
            "id": "inv_test",
            "number": "INV-2031-000001",
            "due_date": datetime(2031, 2, 1, tzinfo=UTC).isoformat(),
            "currency": "EUR",
            "amount_remaining": 50,
            "amount_total": 123450,
        },
        "extra": {"amount": 123400, "gateway": "credit"},
    }


def test_each_language_among_the_recipients_gets_its_own_e_mail(account, owner):
    german = MembershipFactory(account=account, role=Role.BILLING).user
    german.language = "de"
    german.save(update_fields=["language"])
    MembershipFactory(account=account, role=Role.DEVELOPER)  # not written to

    assert recipients_by_language(account) == {"de": [german.email], "en": [owner.email]}
    assert recipients(account) == sorted([german.email, owner.email])
    assert billing_notices_send.call([payment_received(account)]) == 1
    sent = {tuple(message.to): message for message in mail.outbox}

    english, in_german = sent[(owner.email,)], sent[(german.email,)]
    assert english.subject == "Payment received for invoice INV-2031-000001"
    assert "We received 1,234.00 EUR for invoice INV-2031-000001 (account credit)." in english.body
    assert "Still due on it: 0.50 EUR." in english.body
    assert "/billing/invoices/inv_test" in english.body
    assert "1.234,00\N{NO-BREAK SPACE}EUR" in in_german.body  # German separators
    assert "0,50\N{NO-BREAK SPACE}EUR" in in_german.body


def test_the_billing_profiles_address_is_written_to_in_its_members_language_else_the_owners(
    account, owner
):
    owner.language = "fr"
    owner.save(update_fields=["language"])
    profile, _ = BillingProfile.objects.get_or_create(account=account)
    profile.email = owner.email.upper()
    profile.save(update_fields=["email"])
    assert recipients_by_language(account) == {"fr": [owner.email.upper()]}

    # An address no member has (the company's accounts mailbox): the first owner's language.
    profile.email = "accounts@example.com"
    profile.save(update_fields=["email"])
    assert recipients_by_language(account) == {"fr": ["accounts@example.com"]}

    # An owner who chose no language: English.
    owner.language = ""
    owner.save(update_fields=["language"])
    assert recipients_by_language(account) == {"en": ["accounts@example.com"]}


def test_a_notice_queued_with_amounts_already_written_is_sent_as_it_was(account, owner):
    """A task queued before the amounts travelled unformatted still sends."""
    notice = payment_received(account)
    notice["invoice"] = {
        "id": "inv_test",
        "number": "INV-2031-000001",
        "due_date": None,
        "amount_remaining": 0,
        "total": "1,234.50 EUR",
        "remaining": "0.00 EUR",
    }
    notice["extra"] = {"amount": "1,234.50 EUR", "gateway": "account credit"}
    assert billing_notices_send.call([notice]) == 1
    [message] = mail.outbox
    assert "We received 1,234.50 EUR for invoice INV-2031-000001 (account credit)." in message.body
    assert "The invoice is paid. Thank you." in message.body
