"""Staff rights by job (accounts/roles.py): a staff member's role decides the ``admin:*`` scopes
their keys may hold and use, the Django admin pages they see, whether they work the desk, and
which staff reports they read."""

import importlib
import json
import re

import pytest
from django.apps import apps
from django.contrib.admin.utils import quote
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from accounts.actors import Actor
from accounts.models import ApiKey, User
from accounts.roles import STAFF_SCOPES, Role, StaffRole
from accounts.services import api_key_create
from billing.models import BalanceTransaction, CreditNote, Invoice, Payment
from hosting.api.permissions import scopes_in_area, staff_area_of
from hosting.errors import InsufficientScope
from servers.models import Node
from support.models import Department, Ticket
from support.services.tickets import Requester, ticket_open
from tests.billing.test_seed_demo import EMAIL, run
from tests.envelopes import error_of
from tests.factories import AccountFactory, InvoiceFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

ALL_STAFF = ["admin:read", "admin:write"]


@pytest.fixture
def company(db):
    return AccountFactory(name="Hosting Company")


@pytest.fixture
def customer(db):
    return AccountFactory(name="A Customer")


def staff_member(company, role: str, email: str | None = None) -> User:
    user = UserFactory(email=email or f"{role}@hosting.example", is_staff=True, staff_role=role)
    MembershipFactory(account=company, user=user, role=Role.OWNER)
    return user


def api_of(user: User, company, scopes: list[str], client_for):
    _, token = api_key_create(account=company, user=user, name="job", scopes=scopes)
    return client_for(token)


def credit(api, customer):
    return api.post(
        f"/v1/admin/customers/{customer.id}/balance-transactions",
        json.dumps({"amount": 500, "currency": "EUR", "description": "Goodwill"}),
        content_type="application/json",
    )


# --- The staff API ------------------------------------------------------------------------------


def test_billing_staff_credit_accounts_and_read_invoices_but_not_nodes(
    company, customer, client_for
):
    billing = staff_member(company, StaffRole.BILLING)
    api = api_of(billing, company, ["admin:billing:write", "admin:customers:read"], client_for)

    assert api.get("/v1/admin/invoices").status_code == 200
    assert api.get("/v1/admin/customers").status_code == 200
    assert credit(api, customer).status_code == 201
    error = error_of(api.get("/v1/admin/nodes"), 403)
    assert error["code"] == "insufficient_scope"
    assert error["details"] == {"required_scopes": ["admin:read"]}
    assert "admin:nodes:read" in error["message"]


def test_fleet_staff_manage_nodes_but_cannot_credit_an_account(company, customer, client_for):
    fleet = staff_member(company, StaffRole.FLEET)
    api = api_of(fleet, company, ["admin:nodes:write"], client_for)

    assert api.get("/v1/admin/nodes").status_code == 200
    error = error_of(credit(api, customer), 403)
    assert error["code"] == "insufficient_scope"
    assert error["details"] == {"required_scopes": ["admin:write"]}
    assert not BalanceTransaction.objects.filter(account=customer).exists()
    assert error_of(api.get("/v1/admin/invoices"), 403)["code"] == "insufficient_scope"
    assert error_of(api.get("/v1/admin/reports/mrr"), 403)["code"] == "insufficient_scope"
    assert api.get("/v1/admin/reports/fleet").status_code == 200


def test_support_agents_work_tickets_and_read_customers_but_not_billing(company, client_for):
    agent = staff_member(company, StaffRole.SUPPORT_AGENT)
    api = api_of(agent, company, ["admin:support:write", "admin:customers:read"], client_for)

    assert api.get("/v1/admin/tickets").status_code == 200
    assert api.get("/v1/admin/customers").status_code == 200
    assert api.get("/v1/admin/reports/tickets").status_code == 200
    assert error_of(api.get("/v1/admin/invoices"), 403)["code"] == "insufficient_scope"
    refused = api.post(
        "/v1/admin/customers", json.dumps({"name": "New"}), content_type="application/json"
    )
    assert error_of(refused, 403)["details"] == {"required_scopes": ["admin:write"]}


@pytest.mark.parametrize(
    ("role", "scope"),
    [
        (StaffRole.FLEET, "admin:billing:write"),
        (StaffRole.FLEET, "admin:write"),
        (StaffRole.SUPPORT_AGENT, "admin:read"),
        (StaffRole.BILLING, "admin:nodes:read"),
        (StaffRole.BILLING, "admin:customers:write"),
    ],
)
def test_a_key_may_not_hold_a_scope_beyond_its_users_staff_role(
    company, client_for, make_token, role, scope
):
    user = staff_member(company, role)
    api = client_for(make_token(user, company, ["api_keys:write"]))

    response = api.post(
        "/v1/api-keys",
        json.dumps({"name": "Too wide", "scopes": [scope]}),
        content_type="application/json",
    )

    error = error_of(response, 403)
    assert error["code"] == "insufficient_scope"
    assert error["details"]["required_scopes"] == [scope]
    assert error["details"]["fields"][0]["code"] == "not_permitted"
    assert f"The staff role '{role}' may not grant: {scope}." == error["message"]
    assert list(ApiKey.objects.filter(user=user).values_list("name", flat=True)) == ["Test key"]


def test_customers_may_hold_no_staff_scope(owner, account):
    for scope in STAFF_SCOPES:
        with pytest.raises(InsufficientScope, match=f"The role 'owner' may not grant: {scope}"):
            api_key_create(account=account, user=owner, name="x", scopes=[scope])


def test_a_key_stops_working_for_what_its_users_role_lost(company, customer, client_for):
    user = staff_member(company, StaffRole.ADMINISTRATOR)
    api = api_of(user, company, ALL_STAFF, client_for)
    assert api.get("/v1/admin/invoices").status_code == 200
    assert api.get("/v1/admin/nodes").status_code == 200

    user.staff_role = StaffRole.FLEET
    user.save(update_fields=["staff_role"])

    assert error_of(api.get("/v1/admin/invoices"), 403)["code"] == "insufficient_scope"
    assert error_of(credit(api, customer), 403)["code"] == "insufficient_scope"
    assert api.get("/v1/admin/nodes").status_code == 200
    assert not BalanceTransaction.objects.filter(account=customer).exists()

    user.is_staff = False
    user.save(update_fields=["is_staff"])
    assert error_of(api.get("/v1/admin/nodes"), 403)["code"] == "insufficient_scope"


def test_a_replayed_answer_needs_the_area_scope_still(company, customer, client_for):
    user = staff_member(company, StaffRole.ADMINISTRATOR)
    api = api_of(user, company, ALL_STAFF, client_for)
    first = api.post(
        f"/v1/admin/customers/{customer.id}/balance-transactions",
        json.dumps({"amount": 500, "currency": "EUR", "description": "Goodwill"}),
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="credit-1",
    )
    assert first.status_code == 201, first.content

    user.staff_role = StaffRole.FLEET
    user.save(update_fields=["staff_role"])
    credit_again = api.post(
        f"/v1/admin/customers/{customer.id}/balance-transactions",
        json.dumps({"amount": 500, "currency": "EUR", "description": "Goodwill"}),
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="credit-1",
    )

    assert error_of(credit_again, 403)["code"] == "insufficient_scope"
    assert BalanceTransaction.objects.filter(account=customer).count() == 1


def test_superusers_administer_whatever_their_role_says(company, client_for):
    user = staff_member(company, StaffRole.FLEET)
    user.is_superuser = True
    user.save(update_fields=["is_superuser"])
    api = api_of(user, company, ALL_STAFF, client_for)

    assert user.staff_role_now == StaffRole.ADMINISTRATOR
    assert api.get("/v1/admin/invoices").status_code == 200
    assert api.get("/v1/admin/nodes").status_code == 200


def _admin_routes(resolver: URLResolver, prefix: str = "") -> list[str]:
    """Every route under /v1/admin/, its parameters filled with a sample id."""
    found = []
    for pattern in resolver.url_patterns:
        route = prefix + str(pattern.pattern).lstrip("^")
        if isinstance(pattern, URLResolver):
            found += _admin_routes(pattern, route)
        elif isinstance(pattern, URLPattern) and route.startswith("v1/admin/"):
            found.append(route)
    return found


def test_every_staff_endpoint_belongs_to_an_area():
    routes = _admin_routes(get_resolver())
    assert len(routes) > 40
    for route in routes:
        # The routers' named groups and the converters' <…> each become one sample segment.
        sample = re.sub(r"\(\?P<[^>]+>[^)]*\)|<[^>]+>", "x", route.rstrip("$"))
        assert staff_area_of("/" + sample) is not None, route


@pytest.mark.parametrize(
    ("path", "area"),
    [
        ("/v1/admin/customers", "customers"),
        ("/v1/admin/customers/acct_1/members", "customers"),
        ("/v1/admin/customers/acct_1/suspend", "customers"),
        ("/v1/admin/customers/acct_1/balance-transactions", "billing"),
        ("/v1/admin/customers/acct_1/balance-transactions/btx_1", "billing"),
        ("/v1/admin/customers/acct_1/billing-profile", "billing"),
        ("/v1/admin/customers/acct_1/billing-clock", "billing"),
        ("/v1/admin/invoices/inv_1/void", "billing"),
        ("/v1/admin/promotion-codes", "billing"),
        ("/v1/admin/reports/mrr", "billing"),
        ("/v1/admin/reports/mrr.csv", "billing"),
        ("/v1/admin/reports/fleet.csv", "nodes"),
        ("/v1/admin/reports/ar-aging", "billing"),
        ("/v1/admin/reports/tickets", "support"),
        ("/v1/admin/reports/fleet", "nodes"),
        ("/v1/admin/tickets/tkt_1/merge", "support"),
        ("/v1/admin/nodes/node_1/rotate-token", "nodes"),
        ("/v1/admin/customersx", None),
        ("/v1/admin/reports/unknown", None),
    ],
)
def test_each_staff_endpoint_is_in_its_jobs_area(path, area):
    assert staff_area_of(path) == area


def test_a_staff_endpoint_of_no_area_fails_closed():
    assert scopes_in_area(["servers:read"], "/v1/servers") == ["servers:read"]
    assert scopes_in_area(["admin:write"], "/v1/admin/nodes/node_1") == ["admin:nodes:write"]
    with pytest.raises(ImproperlyConfigured, match="No staff area"):
        scopes_in_area(["admin:read"], "/v1/admin/somewhere-new")


def test_existing_staff_become_administrators_by_the_migration(db):
    legacy = UserFactory(email="old-staff@hosting.example", is_staff=True)
    customer = UserFactory(email="someone@example.com")
    chosen = UserFactory(email="chosen@hosting.example", is_staff=True, staff_role="fleet")
    migration = importlib.import_module("accounts.migrations.0006_staff_role")

    migration.existing_staff_administer(apps, None)

    assert [User.objects.get(pk=user.pk).staff_role for user in (legacy, customer, chosen)] == [
        "administrator",
        "",
        "fleet",
    ]


# --- Django admin -------------------------------------------------------------------------------


def admin_client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def changelist(model) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def index_models(client: Client) -> set[str]:
    response = client.get(reverse("admin:index"))
    assert response.status_code == 200
    return {
        f"{app['app_label']}.{model['object_name'].lower()}"
        for app in response.context["app_list"]
        for model in app["models"]
    }


def test_billing_staff_see_the_billing_back_office_but_not_nodes(company):
    client = admin_client(staff_member(company, StaffRole.BILLING))

    shown = index_models(client)
    assert {"billing.invoice", "billing.payment", "billing.creditnote"} <= shown
    assert "servers.node" not in shown and "accounts.user" not in shown
    for model in (Invoice, Payment, CreditNote, BalanceTransaction):
        assert client.get(changelist(model)).status_code == 200
    assert client.get(changelist(Node)).status_code == 403


def test_fleet_staff_see_nodes_but_cannot_credit_an_account(company, customer):
    client = admin_client(staff_member(company, StaffRole.FLEET))

    shown = index_models(client)
    assert "servers.node" in shown
    assert not any(name.startswith("billing.") for name in shown)
    assert client.get(changelist(Node)).status_code == 200
    add = reverse("admin:billing_balancetransaction_add")
    assert client.get(add).status_code == 403
    posted = client.post(
        add, {"account": customer.pk, "amount": "5.00", "currency": "EUR", "description": "x"}
    )
    assert posted.status_code == 403
    assert not BalanceTransaction.objects.filter(account=customer).exists()


def test_support_agents_see_tickets_but_not_billing(company):
    client = admin_client(staff_member(company, StaffRole.SUPPORT_AGENT))

    shown = index_models(client)
    assert "support.ticket" in shown
    assert not any(name.startswith("billing.") for name in shown)
    assert client.get(changelist(Ticket)).status_code == 200
    assert client.get(changelist(Invoice)).status_code == 403
    assert client.get(changelist(User)).status_code == 403


def test_staff_without_a_role_keep_only_djangos_own_permissions_in_admin(company):
    client = admin_client(UserFactory(email="norole@hosting.example", is_staff=True))

    assert index_models(client) == set()
    assert client.get(changelist(Invoice)).status_code == 403


def test_admin_asks_a_staff_member_for_a_role(company, admin_client):
    user = UserFactory(email="new-staff@hosting.example")
    url = reverse("admin:accounts_user_change", args=[quote(user.pk)])
    form = {"email": user.email, "name": user.name, "is_active": "on", "is_staff": "on"}

    refused = admin_client.post(url, form)
    chosen = admin_client.post(url, form | {"staff_role": StaffRole.SUPPORT_AGENT})

    assert refused.status_code == 200
    assert "staff_role" in refused.context["adminform"].form.errors
    assert chosen.status_code == 302, chosen.content.decode()[:2000]
    user.refresh_from_db()
    assert (user.is_staff, user.staff_role) == (True, StaffRole.SUPPORT_AGENT)


# --- The desk and the staff pages ---------------------------------------------------------------


@pytest.fixture
def technical(db):
    return Department.objects.create(name="Technical", email="tech@desk.example")


@pytest.mark.parametrize(
    ("role", "status"),
    [
        (StaffRole.SUPPORT_AGENT, 200),
        (StaffRole.BILLING, 200),
        (StaffRole.ADMINISTRATOR, 200),
        (StaffRole.FLEET, 404),
    ],
)
def test_only_roles_that_work_the_desk_reach_it(company, technical, role, status):
    user = staff_member(company, role)
    technical.members.add(user)

    response = admin_client(user).get(reverse("desk"))

    assert response.status_code == status


@pytest.mark.parametrize(
    ("role", "shown"), [(StaffRole.SUPPORT_AGENT, False), (StaffRole.BILLING, True)]
)
def test_the_desk_shows_a_customers_invoices_only_to_roles_that_read_billing(
    company, technical, owner, account, role, shown
):
    invoice = InvoiceFactory(
        account=account,
        lines=[{"description": "Plan", "quantity": 1, "unit_amount": 1250}],
        finalize=True,
    )
    ticket, _ = ticket_open(
        requester=Requester(email=owner.email, name="Owner", user=owner, account=account),
        subject="Slow",
        body="Since today.",
        department=technical,
        channel="web",
        actor=Actor(user=owner),
    )
    user = staff_member(company, role)
    technical.members.add(user)

    response = admin_client(user).get(reverse("desk_ticket", args=[ticket.id]))

    assert response.status_code == 200
    customer = response.context["customer"]
    assert [each.id for each in customer["invoices"]] == ([invoice.id] if shown else [])
    assert ("12.50 EUR" in response.content.decode()) is shown
    assert ("Open invoices" in response.content.decode()) is shown


@pytest.mark.parametrize(
    ("role", "sections"),
    [
        (StaffRole.FLEET, ["fleet", "nodes"]),
        (StaffRole.SUPPORT_AGENT, ["tickets"]),
        (StaffRole.BILLING, ["mrr", "churn", "revenue", "ar-aging", "tickets"]),
    ],
)
def test_staff_reports_show_what_the_role_may_read(company, role, sections):
    client = admin_client(staff_member(company, role))

    page = client.get(reverse("analytics_staff_reports"))

    assert page.status_code == 200
    assert [section["name"] for section in page.context["sections"]] == sections
    refused = "mrr" if role != StaffRole.BILLING else "fleet"
    csv = client.get(reverse("analytics_staff_report_csv", args=[refused]))
    assert csv.status_code == 404


def test_the_demo_staff_member_works_the_desk_and_the_billing_back_office(db):
    run("seed_demo", "--servers", "0", "--email", EMAIL)
    run("seed_support_demo", "--email", EMAIL, "--password", "staff-password")
    client = Client()
    assert client.login(username="staff@example.com", password="staff-password")

    invoices = client.get(changelist(Invoice))
    desk = client.get(reverse("desk"))

    assert invoices.status_code == 200
    assert "permission to view or edit anything" not in invoices.content.decode()
    assert desk.status_code == 200
    assert client.get(changelist(Node)).status_code == 403
    assert User.objects.get(email="staff@example.com").staff_role == StaffRole.BILLING


def test_only_staff_who_work_the_desk_join_departments_or_take_tickets(company, customer):
    """Fleet staff do not work the desk: they cannot be put in a department, given a ticket, or
    hear of one (a department made before the roles keeps them, but passes them by)."""
    from hosting.errors import ValidationFailed
    from support.services.departments import department_save
    from support.services.notifications import staff_recipients
    from support.services.tickets import ticket_assign

    fleet = staff_member(company, StaffRole.FLEET)
    agent = staff_member(company, StaffRole.SUPPORT_AGENT)
    with pytest.raises(ValidationFailed) as refused:
        department_save(
            department=None,
            name="Ops",
            email="ops@desk.example",
            default_priority="normal",
            sla_policy=None,
            customer_visible=True,
            active=True,
            members=[fleet, agent],
            actor=Actor(user=agent),
        )
    assert fleet.email in refused.value.message
    department = Department.objects.create(name="Ops", email="ops@desk.example")
    department.members.add(fleet, agent)  # as a department made before staff roles
    ticket, _ = ticket_open(
        requester=Requester(email="someone@example.com", account=customer),
        subject="Help",
        body="It broke.",
        department=department,
        channel="web",
        actor=Actor(),
    )
    with pytest.raises(ValidationFailed):
        ticket_assign(ticket=ticket, assignee=fleet, actor=Actor(user=agent))
    assert ticket_assign(ticket=ticket, assignee=agent, actor=Actor(user=agent)).assignee == agent
    ticket.assignee = None
    assert fleet.email not in staff_recipients(ticket)
    assert agent.email in staff_recipients(ticket)
