"""Each resource's representation function (beside its model) is what its API serializer shows.

The API answers with the function and events carry it; the serializer's declared fields document
it in the OpenAPI schema. Here both are computed for objects with every optional value set, and
DRF's own output from the declared fields must equal the function's, key for key and value for
value, so the schema can never describe something other than what is sent.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.actors import SYSTEM, Actor
from accounts.api.serializers import (
    AccountSerializer,
    ApiKeySerializer,
    InvitationSerializer,
    MemberSerializer,
)
from accounts.models import ApiKey, Membership
from accounts.roles import Role
from accounts.services import account_suspend, api_key_create, api_key_revoke, invitation_create
from billing.api.serializers.balance import BalanceTransactionSerializer
from billing.api.serializers.coupons import CouponSerializer, PromotionCodeSerializer
from billing.api.serializers.credit_notes import CreditNoteSerializer
from billing.api.serializers.invoices import (
    InvoiceLineSerializer,
    InvoiceSerializer,
    PaymentSerializer,
)
from billing.api.serializers.products import PriceSerializer, ProductSerializer
from billing.api.serializers.profile import BillingProfileSerializer
from billing.api.serializers.subscriptions import SubscriptionSerializer
from billing.api.serializers.tax_rates import TaxRateSerializer
from billing.models import BalanceTransaction, Payment, Price, Product, Subscription
from billing.selectors import billing_profile_of, coupons_all, invoices_all, products_for_sale
from billing.services import (
    balance_change,
    credit_note_create,
    invoice_create,
    invoice_finalize,
    invoice_mark_paid,
)
from billing.services.catalogue import coupon_create, promotion_code_create, tax_rate_create
from billing.services.profile import BillingProfileChanges, billing_profile_update
from events.api.serializers import EventSerializer
from events.models import Event
from hosting.api.serializers import RepresentedBy
from servers.api.serializers import (
    ActionSerializer,
    BotSerializer,
    ServerDetailSerializer,
    ServerSerializer,
)
from servers.models import Action, Bot
from servers.services import action_request, bot_create
from stripe_gateway.api.serializers import PaymentMethodSerializer
from stripe_gateway.models import PaymentMethod
from tests.factories import ServerFactory
from webhooks.api.serializers import WebhookEndpointSerializer
from webhooks.models import WebhookEndpoint


def declared_output(serializer_class, instance) -> dict:
    """What DRF makes of the serializer's declared fields, without the representation function."""
    serializer = serializer_class()
    return super(RepresentedBy, serializer).to_representation(instance)


def assert_same(serializer_class, instance) -> None:
    shown = serializer_class().to_representation(instance)
    assert shown == declared_output(serializer_class, instance)
    assert list(shown) == list(serializer_class().fields)


@pytest.fixture
def owner_actor(owner):
    return Actor(user=owner)


def test_account_and_member_are_shown_as_declared(account, owner, owner_actor):
    account_suspend(account=account, reason="Unpaid invoice", actor=SYSTEM)
    account.refresh_from_db()
    assert account.suspended_at is not None
    assert_same(AccountSerializer, account)
    assert_same(MemberSerializer, Membership.objects.select_related("user").get(user=owner))


def test_invitation_and_api_key_are_shown_as_declared(account, owner, owner_actor):
    invitation, _ = invitation_create(
        account=account, email="new@example.com", role=Role.DEVELOPER, actor=owner_actor
    )
    assert_same(InvitationSerializer, invitation)
    api_key, _ = api_key_create(
        account=account,
        user=owner,
        name="CI",
        scopes=["servers:read"],
        expires_at=timezone.now() + timedelta(days=3),
        allowed_ips=["203.0.113.0/24"],
        actor=owner_actor,
    )
    ApiKey.objects.filter(pk=api_key.pk).update(
        last_used_at=timezone.now(), last_used_ip="203.0.113.9"
    )
    api_key_revoke(api_key=api_key, actor=owner_actor)
    api_key.refresh_from_db()
    assert api_key.revoked_at is not None
    assert_same(ApiKeySerializer, api_key)


def test_servers_bots_and_actions_are_shown_as_declared(account, owner_actor):
    server = ServerFactory(account=account, address="203.0.113.10:25565", status_reason="crash")
    assert_same(ServerSerializer, server)
    assert_same(ServerDetailSerializer, server)
    bot = bot_create(
        account=account,
        name="Helper",
        region="eu-central",
        runtime="python-3.13",
        start_command="python bot.py",
        token="x" * 40,
        environment={"LOG": "debug"},
        actor=owner_actor,
    )
    assert_same(BotSerializer, Bot.objects.get(pk=bot.pk))
    for action in Action.objects.filter(account=account):
        assert_same(ActionSerializer, action)
    done = action_request(instance=server, action_type="stop", actor=owner_actor)
    Action.objects.filter(pk=done.pk).update(
        started_at=timezone.now(), completed_at=timezone.now(), error="Timed out"
    )
    done.refresh_from_db()
    assert_same(ActionSerializer, done)


def test_payment_method_is_shown_as_declared(account):
    method = PaymentMethod.objects.create(
        account=account,
        stripe_id="pm_1Test",
        brand="visa",
        last4="4242",
        exp_month=3,
        exp_year=2031,
        is_default=True,
    )
    assert_same(PaymentMethodSerializer, method)


def test_webhook_endpoint_is_shown_as_declared(account, owner):
    endpoint = WebhookEndpoint.objects.create(
        account=account,
        url="https://hooks.example.com/in",
        description="Ops",
        enabled_events=["server.*"],
        created_by=owner,
        secret_encrypted="x",
        previous_secret_expires_at=timezone.now(),
        failing_since=timezone.now(),
        failure_streak=2,
        last_delivery_at=timezone.now(),
        last_delivery_status=500,
    )
    assert_same(WebhookEndpointSerializer, endpoint)


def test_billing_objects_are_shown_as_declared(account, owner_actor):
    product = Product.objects.create(
        name="Minecraft 4 GB",
        description="Up to 20 players",
        kind="server",
        memory_mb=4096,
        cpu_percent=200,
        disk_mb=20480,
        games=["minecraft-java"],
        regions=["eu-central"],
        runtimes=["python-3.13"],
    )
    price = Price.objects.create(
        product=product,
        currency="EUR",
        unit_amount=1200,
        interval="month",
        interval_count=3,
        setup_fee=500,
        trial_days=7,
    )
    assert_same(PriceSerializer, price)
    assert_same(ProductSerializer, products_for_sale().get(pk=product.pk))
    now = timezone.now()
    subscription = Subscription.objects.create(
        account=account,
        price=price,
        billing_cycle_anchor=now,
        current_period_start=now,
        current_period_end=now + timedelta(days=90),
    )
    billing_profile_update(
        account=account,
        actor=owner_actor,
        staff=True,
        changes=BillingProfileChanges(
            legal_name="Blockworks GmbH",
            email="billing@example.com",
            address_line1="Hauptstraße 5",
            address_line2="3. OG",
            postal_code="10115",
            city="Berlin",
            region="Berlin",
            country="DE",
            vat_id="DE136695976",
            tax_exempt=True,
        ),
    )
    line = {
        "description": "Plan",
        "quantity": 2,
        "unit_amount": 600,
        "price": price,
        "period_start": now,
        "period_end": now + timedelta(days=90),
        "proration": True,
        "discount_amount": 100,
        "tax_amount": 50,
    }
    invoice = invoice_create(
        account=account,
        currency="EUR",
        lines=[line],
        subscription=subscription,
        period_start=now,
        period_end=now + timedelta(days=90),
    )
    invoice = invoice_finalize(invoice=invoice, actor=owner_actor)
    invoice = invoice_mark_paid(invoice=invoice, reference="SEPA 1", actor=owner_actor)
    invoice = invoices_all().get(pk=invoice.pk)
    assert invoice.due_date and invoice.paid_at and invoice.buyer
    assert_same(InvoiceSerializer, invoice)
    assert_same(InvoiceLineSerializer, invoice.lines.get())
    assert_same(BillingProfileSerializer, billing_profile_of(account))
    credit_note = credit_note_create(
        invoice=invoice,
        amount=300,
        reason="duplicate",
        refund_to="balance",
        memo="Twice",
        actor=owner_actor,
    )
    assert_same(CreditNoteSerializer, credit_note)
    entry = BalanceTransaction.objects.get(credit_note=credit_note)
    assert entry.invoice_id and entry.credit_note_id
    assert_same(BalanceTransactionSerializer, entry)
    assert_same(
        BalanceTransactionSerializer,
        balance_change(
            account=account,
            amount=-100,
            currency="EUR",
            kind="adjustment",
            description="Correction",
            actor=owner_actor,
        ),
    )
    payment = Payment.objects.get(invoice=invoice)
    Payment.objects.filter(pk=payment.pk).update(
        status="refunded", failed_at=now, refunded_at=now, failure_message="Bounced"
    )
    payment.refresh_from_db()
    assert_same(PaymentSerializer, payment)


def test_subscriptions_and_the_catalogue_are_shown_as_declared(account, owner_actor):
    product = Product.objects.create(
        name="Minecraft 4 GB", kind="server", memory_mb=4096, cpu_percent=200, disk_mb=20480
    )
    price = Price.objects.create(
        product=product, currency="EUR", unit_amount=1200, interval="month"
    )
    now = timezone.now()
    coupon = coupon_create(
        name="Ten",
        percent_off="12.5",
        duration="repeating",
        duration_in_months=3,
        max_redemptions=9,
        redeem_by=now + timedelta(days=30),
        products=[product],
        actor=owner_actor,
    )
    assert_same(CouponSerializer, coupons_all().get(pk=coupon.pk))
    assert_same(
        CouponSerializer,
        coupon_create(
            name="Five off", amount_off=500, currency="EUR", duration="once", actor=owner_actor
        ),
    )
    code = promotion_code_create(
        coupon=coupon,
        code="TEN",
        max_redemptions=5,
        expires_at=now + timedelta(days=9),
        actor=owner_actor,
    )
    assert_same(PromotionCodeSerializer, code)
    assert_same(
        TaxRateSerializer,
        tax_rate_create(country="US", region="NY", percentage="8.875", actor=owner_actor),
    )
    subscription = Subscription.objects.create(
        account=account,
        price=price,
        billing_cycle_anchor=now,
        current_period_start=now,
        current_period_end=now + timedelta(days=30),
        trial_end=now,
        canceled_at=now,
        ended_at=now,
        coupon=coupon,
        discount_end=now,
        cancel_at_period_end=True,
        order={"name": "SMP", "region": "eu-central", "token_encrypted": "secret"},
    )
    shown = SubscriptionSerializer().to_representation(subscription)
    assert "token_encrypted" not in shown["order"]
    assert_same(SubscriptionSerializer, subscription)


def test_events_are_shown_as_declared(account, owner, owner_actor):
    """Caused by a person's key (every actor field set), and by staff (shown without them)."""
    api_key, _ = api_key_create(
        account=account, user=owner, name="CI", scopes=["servers:read"], actor=owner_actor
    )
    for staff in (False, True):
        owner.is_staff = staff
        owner.save(update_fields=["is_staff"])
        event = Event.objects.create(
            account=account,
            type="server.updated",
            object_type="server",
            object_id="srv_1",
            data={"object": {"id": "srv_1", "name": "A"}, "previous_attributes": {"name": "B"}},
            actor_user=owner,
            actor_api_key=api_key,
            actor_ip="203.0.113.9",
        )
        event.refresh_from_db()
        assert_same(EventSerializer, event)
        assert EventSerializer().to_representation(event)["actor"]["staff"] is staff
