"""The customer 360 (issue 34, item 12): an account's admin page lists its members, servers and
bots, subscriptions, invoices and balance, tickets, recent activity and staff notes, with the
actions staff take from there, each shown and allowed only to the staff roles that may."""

import html
import re

import pytest
from django.contrib.admin.utils import quote
from django.contrib.messages import get_messages
from django.urls import reverse

from accounts.actors import Actor
from accounts.models import Account, AccountNote
from accounts.roles import Role, StaffRole
from accounts.services import account_note_add
from billing.models import BalanceTransaction
from billing.services.ledger import balance_change
from hosting.errors import ValidationFailed
from support.models import Ticket
from tests.accounts.test_staff_roles import admin_client, staff_member
from tests.factories import (
    AccountFactory,
    BotFactory,
    DepartmentFactory,
    InvoiceFactory,
    MembershipFactory,
    ServerFactory,
    SubscriptionFactory,
    TicketFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def company(db):
    return AccountFactory(name="Hosting Company")


@pytest.fixture
def customer(db):
    account = AccountFactory(name="Blockworks")
    owner = MembershipFactory(account=account, role=Role.OWNER).user
    MembershipFactory(account=account, role=Role.SUPPORT, user__email="helper@blockworks.example")
    ServerFactory(account=account, name="Survival SMP")
    BotFactory(account=account, name="Moderator bot")
    SubscriptionFactory(account=account)
    InvoiceFactory(
        account=account,
        finalize=True,
        lines=[{"description": "Plan", "quantity": 1, "unit_amount": 899}],
    )
    balance_change(
        account=account,
        amount=250,
        currency="EUR",
        kind="adjustment",
        description="Goodwill",
        actor=Actor(),
    )
    TicketFactory(account=account, requester=owner, subject="Lag at night")
    account_note_add(account=account, body="Prefers e-mail.", actor=Actor())
    return account


def page_of(client, account):
    return client.get(reverse("admin:accounts_account_change", args=[quote(account.pk)]))


def said(response) -> list[str]:
    return [message.message for message in get_messages(response.wsgi_request)]


SECTIONS = [
    "customer-servers",
    "customer-subscriptions",
    "customer-invoices",
    "customer-tickets",
    "customer-activity",
    "customer-notes",
]


def test_an_administrator_sees_every_section_and_every_action(company, customer):
    client = admin_client(staff_member(company, StaffRole.ADMINISTRATOR))

    response = page_of(client, customer)
    page = response.content.decode()

    assert response.status_code == 200
    for section in SECTIONS:
        assert f'id="{section}"' in page, section
    # Members with their roles, servers and bots with status, money in units.
    assert "helper@blockworks.example" in page and "Support" in page
    assert "Survival SMP" in page and "Moderator bot" in page and "Running" in page
    assert "Balance (credit): 2.50 EUR" in page
    assert "8.99 EUR" in page
    assert "Lag at night" in page
    assert "customer.balance_changed" in page  # recent activity
    assert "Prefers e-mail." in page
    for action in ("customer-suspend", "customer-add-credit", "customer-open-ticket"):
        assert f'id="{action}"' in page, action
    assert "refused" not in page


def test_a_support_agent_sees_tickets_but_neither_billing_nor_actions_beyond_theirs(
    company, customer
):
    client = admin_client(staff_member(company, StaffRole.SUPPORT_AGENT))

    page = page_of(client, customer).content.decode()

    assert "Survival SMP" in page and "Lag at night" in page
    assert "Your staff role does not see invoices or balances." in page
    assert "Your staff role does not see subscriptions." in page
    assert "2.50 EUR" not in page
    assert 'id="customer-open-ticket"' in page
    assert 'id="customer-suspend"' not in page and 'id="customer-add-credit"' not in page

    refused = client.post(reverse("admin:accounts_account_suspend", args=[quote(customer.pk)]))
    assert refused.status_code == 403
    customer.refresh_from_db()
    assert customer.status == Account.Status.ACTIVE


def test_billing_staff_add_credit_in_units_from_the_page(company, customer):
    client = admin_client(staff_member(company, StaffRole.BILLING))
    page = page_of(client, customer).content.decode()
    assert 'id="customer-add-credit"' in page
    assert "Your staff role does not see servers or bots." in page

    form = (
        client.get(reverse("admin:billing_balancetransaction_add"), {"account": customer.pk})
        .context["adminform"]
        .form
    )
    assert (form["account"].value(), form["currency"].value()) == (customer.pk, "EUR")
    client.post(
        reverse("admin:billing_balancetransaction_add"),
        {"account": customer.pk, "amount": "5", "currency": "EUR", "description": "Outage"},
    )

    assert BalanceTransaction.objects.filter(account=customer).latest("created_at").amount == 500
    assert "Balance (credit): 7.50 EUR" in page_of(client, customer).content.decode()


def test_fleet_staff_may_neither_add_credit_nor_open_tickets(company, customer):
    client = admin_client(staff_member(company, StaffRole.FLEET))

    page = page_of(client, customer).content.decode()

    assert 'id="customer-add-credit"' not in page and 'id="customer-open-ticket"' not in page
    assert (
        client.get(reverse("admin:support_ticket_open"), {"account": customer.pk}).status_code
        == 403
    )
    add = client.get(reverse("admin:billing_balancetransaction_add"), {"account": customer.pk})
    assert add.status_code == 403


def test_suspend_and_unsuspend_from_the_page(company, customer):
    client = admin_client(staff_member(company, StaffRole.ADMINISTRATOR))

    suspended = client.post(reverse("admin:accounts_account_suspend", args=[quote(customer.pk)]))
    customer.refresh_from_db()
    assert (suspended.status_code, customer.status) == (302, Account.Status.SUSPENDED)
    assert said(suspended) == ["Suspended 1 account."]
    page = page_of(client, customer).content.decode()
    assert 'id="customer-unsuspend"' in page and 'id="customer-suspend"' not in page

    client.post(reverse("admin:accounts_account_unsuspend", args=[quote(customer.pk)]))
    customer.refresh_from_db()
    assert customer.status == Account.Status.ACTIVE
    # POST only: a link followed by a crawler suspends nobody.
    assert (
        client.get(reverse("admin:accounts_account_suspend", args=[quote(customer.pk)])).status_code
        == 405
    )


def test_open_a_ticket_for_the_customer(company, customer):
    agent = staff_member(company, StaffRole.SUPPORT_AGENT)
    department = DepartmentFactory(name="Technical")
    department.members.add(agent)
    client = admin_client(agent)
    url = reverse("admin:support_ticket_open") + f"?account={customer.pk}"
    member = customer.memberships.get(role=Role.SUPPORT).user

    form = client.get(url)
    refused = client.post(url, {"requester": member.pk, "department": department.pk})
    stranger = client.post(
        url,
        {
            "requester": company.memberships.first().user.pk,
            "department": department.pk,
            "subject": "x",
            "body": "y",
        },
    )
    done = client.post(
        url,
        {
            "requester": member.pk,
            "department": department.pk,
            "subject": "Your server's disk is nearly full",
            "body": "We noticed 95 % of the disk in use.",
        },
    )

    assert form.status_code == 200
    assert set(refused.context["form"].errors) == {"subject", "body"}
    assert "requester" in stranger.context["form"].errors  # members of this account only
    ticket = Ticket.objects.get(subject="Your server's disk is nearly full")
    assert (ticket.account, ticket.requester, ticket.department) == (customer, member, department)
    assert done.status_code == 302 and done["Location"] == reverse("desk_ticket", args=[ticket.pk])
    assert client.get(reverse("admin:support_ticket_open")).status_code == 404


def test_staff_notes_are_added_by_any_staff_who_see_the_account(company, customer):
    client = admin_client(staff_member(company, StaffRole.FLEET))
    url = reverse("admin:accounts_account_note", args=[quote(customer.pk)])

    empty = client.post(url, {"body": "   "})
    added = client.post(url, {"body": "Called about node maintenance."})

    assert said(empty) == ["Note not added: Write the note first."]
    assert added.status_code == 302 and added["Location"].endswith("#customer-notes")
    note = AccountNote.objects.get(body="Called about node maintenance.")
    assert note.author.staff_role == StaffRole.FLEET
    page = page_of(client, customer).content.decode()
    assert page.index("Called about node maintenance.") < page.index("Prefers e-mail.")


def test_a_note_is_refused_when_empty_or_too_long(customer):
    for body in ("", "x" * 5001):
        with pytest.raises(ValidationFailed):
            account_note_add(account=customer, body=body, actor=Actor())


def test_staff_without_access_to_accounts_get_no_360(company, customer):
    client = admin_client(staff_member(company, ""))  # no role: Django's own permissions only

    assert page_of(client, customer).status_code == 403
    note = client.post(
        reverse("admin:accounts_account_note", args=[quote(customer.pk)]), {"body": "Hi"}
    )
    assert note.status_code == 403
    assert not AccountNote.objects.filter(body="Hi").exists()


def test_each_section_s_links_open_the_customer_s_own_rows(company, customer):
    client = admin_client(staff_member(company, StaffRole.ADMINISTRATOR))
    page = page_of(client, customer).content.decode()
    other = AccountFactory(name="Someone else")
    ServerFactory(account=other, name="Not theirs")

    links = {
        label: html.unescape(url)
        for url, label in re.findall(
            r'<a href="([^"]+)">(All [a-z ]+|Balance history|Whole event log)</a>', page
        )
    }

    assert set(links) == {
        "All servers",
        "All bots",
        "All subscriptions",
        "All invoices",
        "Balance history",
        "All tickets",
        "Whole event log",
    }
    for label, url in links.items():
        response = client.get(url)
        assert response.status_code == 200, label
        assert response.context["cl"].result_count >= 1, label
    servers = client.get(links["All servers"]).content.decode()
    assert "Survival SMP" in servers and "Not theirs" not in servers
