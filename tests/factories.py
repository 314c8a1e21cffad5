"""factory_boy factories: rows as the services leave them, with the fewest fields a test names.

Where a row's invariants come from a service (an invoice's number and totals), the factory
makes it through that service; otherwise it writes the row, so a test can set any column (a
report's test: dates in the past, a status reached long ago).
"""

import base64
import secrets
from datetime import timedelta

import factory
from django.utils import timezone

from accounts.models import Account, Membership, User
from accounts.roles import Role
from billing.models import Invoice, Price, Product, Subscription, SubscriptionStatus
from billing.services import invoice_create, invoice_finalize
from hosting.secrets_box import encrypt_secret
from servers.models import Bot, Server, ServerStatus
from support.models import Channel, Department, Ticket
from webhooks.models import WebhookEndpoint


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User

    email = factory.Sequence(lambda n: f"user{n}@example.com")
    name = factory.Faker("name")
    password = factory.django.Password("correct-horse-battery")


class AccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Account

    name = factory.Sequence(lambda n: f"Customer {n}")
    # Most tests make servers and bots without a plan, as a host billing elsewhere lets its
    # customers: an allowance beyond any quota a test sets (tests of plans set their own).
    unbilled_instances = 100_000
    unbilled_memory_mb = 100_000_000
    unbilled_cpu_percent = 100_000_000
    unbilled_disk_mb = 100_000_000


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    account = factory.SubFactory(AccountFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.OWNER


class ServerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Server

    account = factory.SubFactory(AccountFactory)
    name = factory.Sequence(lambda n: f"Server {n}")
    game_id = "minecraft-java"
    region_id = "eu-central"
    status = ServerStatus.RUNNING
    created_at = factory.LazyFunction(lambda: timezone.now().replace(microsecond=0))


class BotFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Bot

    account = factory.SubFactory(AccountFactory)
    name = factory.Sequence(lambda n: f"Bot {n}")
    region_id = "eu-central"
    runtime = "python-3.13"
    start_command = "python bot.py"
    status = ServerStatus.RUNNING
    token_encrypted = "not-a-real-token"
    token_last4 = "abcd"
    created_at = factory.LazyFunction(lambda: timezone.now().replace(microsecond=0))


# --- Billing ----------------------------------------------------------------------------------


class ProductFactory(factory.django.DjangoModelFactory):
    """A server plan of 2 GB, one core and 10 GB of disk."""

    class Meta:
        model = Product

    name = factory.Sequence(lambda n: f"Plan {n}")
    kind = "server"
    memory_mb = 2048
    cpu_percent = 100
    disk_mb = 10240


class PriceFactory(factory.django.DjangoModelFactory):
    """10.00 EUR a month, of a product of its own unless one is given."""

    class Meta:
        model = Price

    product = factory.SubFactory(ProductFactory)
    currency = "EUR"
    unit_amount = 1000
    interval = "month"


class SubscriptionFactory(factory.django.DjangoModelFactory):
    """An active subscription's row, in its first 30-day period from now, with neither server
    nor bot nor invoice: for what reads subscriptions (reports, representations). Ordering a
    plan, with its instance and first invoice, is ``subscription_order``'s."""

    class Meta:
        model = Subscription

    account = factory.SubFactory(AccountFactory)
    price = factory.SubFactory(PriceFactory)
    status = SubscriptionStatus.ACTIVE
    billing_cycle_anchor = factory.LazyFunction(lambda: timezone.now().replace(microsecond=0))
    current_period_start = factory.SelfAttribute("billing_cycle_anchor")
    current_period_end = factory.LazyAttribute(
        lambda subscription: subscription.current_period_start + timedelta(days=30)
    )


class InvoiceFactory(factory.Factory):
    """An invoice as billing makes one (``invoice_create``: totals from its lines, taxed as
    the account is): a draft, or with ``finalize=True`` open, numbered and due."""

    class Meta:
        model = Invoice

    account = factory.SubFactory(AccountFactory)
    currency = "EUR"
    lines = factory.LazyFunction(
        lambda: [{"description": "Plan", "quantity": 1, "unit_amount": 1000}]
    )
    finalize = False

    @classmethod
    def _create(cls, model_class, *args, finalize: bool, **kwargs) -> Invoice:
        invoice = invoice_create(**kwargs)
        return invoice_finalize(invoice=invoice) if finalize else invoice


# --- Support ----------------------------------------------------------------------------------


class DepartmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Department

    name = factory.Sequence(lambda n: f"Department {n}")
    email = factory.Sequence(lambda n: f"department{n}@desk.example")


class TicketFactory(factory.django.DjangoModelFactory):
    """A ticket's row, as a guest's web ticket: for what reads tickets (reports). Opening one,
    with its first message and SLA clocks, is ``ticket_open``'s. Its numbers are far above
    the installation's counter, so the tickets a test opens never take one of them."""

    class Meta:
        model = Ticket

    number = factory.Sequence(lambda n: 1_000_000 + n)
    subject = "Help"
    requester_email = "player@example.com"
    department = factory.SubFactory(DepartmentFactory)
    channel = Channel.WEB


# --- Webhooks ---------------------------------------------------------------------------------


class WebhookEndpointFactory(factory.django.DjangoModelFactory):
    """An endpoint's row, for every event; its secret is ``secret`` (given, or a new one).
    Creating one as a member does, with its event, is ``endpoint_create``'s."""

    class Meta:
        model = WebhookEndpoint

    class Params:
        secret = factory.LazyFunction(
            lambda: "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()
        )

    account = factory.SubFactory(AccountFactory)
    url = "https://hooks.example.com/in"
    enabled_events = factory.LazyFunction(lambda: ["*"])
    secret_encrypted = factory.LazyAttribute(lambda endpoint: encrypt_secret(endpoint.secret))
