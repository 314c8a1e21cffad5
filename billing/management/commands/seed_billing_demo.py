"""``manage.py seed_billing_demo``: a catalogue to order from, and the demo account's billing
profile and starting credit (run after ``seed_demo``, as ``./scripts/run`` does).

Everything is created through the billing services, as staff would create it in admin. Running
it again creates nothing twice: a product is found by its name (and an archived one is left
archived), a price by what it charges, a tax rate by its place, the coupon by its promotion
code, the credit by its description; the profile is set only while it is empty.
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts.actors import SYSTEM
from accounts.models import Account
from accounts.roles import Role
from billing.models import (
    BalanceTransaction,
    BillingProfile,
    CouponDuration,
    Price,
    Product,
    ProductKind,
    PromotionCode,
    TaxRate,
)
from billing.services import balance_change
from billing.services.catalogue import (
    coupon_create,
    price_create,
    product_create,
    promotion_code_create,
    tax_rate_create,
)
from billing.services.profile import BillingProfileChanges, billing_profile_update
from hosting.errors import ApplicationError
from hosting.money import format_amount


def price(currency: str, unit_amount: int, interval: str = "month", **extra: int) -> dict:
    """A price as ``price_create`` takes it, every field named, so it is also its own lookup."""
    return {
        "currency": currency,
        "unit_amount": unit_amount,
        "interval": interval,
        "interval_count": 1,
        "setup_fee": 0,
        "trial_days": 0,
        **extra,
    }


MINECRAFT = ["minecraft-java", "minecraft-bedrock"]
# In the order the shop lists them: it shows the newest first, so they are created bottom up.
PLANS: list[dict[str, Any]] = [
    {
        "name": "Minecraft 2 GB",
        "kind": ProductKind.SERVER,
        "games": MINECRAFT,
        "memory_mb": 2048,
        "cpu_percent": 100,
        "disk_mb": 10240,
        "description": "Java or Bedrock for a few friends; try it free for 7 days.",
        "prices": [price("EUR", 499, trial_days=7), price("USD", 549, trial_days=7)],
    },
    {
        "name": "Minecraft 4 GB",
        "kind": ProductKind.SERVER,
        "games": MINECRAFT,
        "memory_mb": 4096,
        "cpu_percent": 200,
        "disk_mb": 20480,
        "description": "Room for plugins and a busy community; yearly: two months free.",
        "prices": [
            price("EUR", 899),
            price("USD", 999),
            price("EUR", 8990, "year"),
            price("USD", 9990, "year"),
        ],
    },
    {
        "name": "Valheim 4 GB",
        "kind": ProductKind.SERVER,
        "games": ["valheim"],
        "memory_mb": 4096,
        "cpu_percent": 200,
        "disk_mb": 20480,
        "description": "A dedicated Valheim world for up to 10 Vikings.",
        "prices": [price("EUR", 949), price("USD", 1049)],
    },
    {
        "name": "Game server 8 GB",
        "kind": ProductKind.SERVER,
        "games": [],
        "memory_mb": 8192,
        "cpu_percent": 400,
        "disk_mb": 51200,
        "description": "Any game of the catalogue; monthly with a setup fee, or by the hour.",
        "prices": [
            price("EUR", 1799, setup_fee=999),
            price("USD", 1999, setup_fee=1099),
            price("EUR", 3, "hour"),
        ],
    },
    {
        "name": "Bot 256 MB",
        "kind": ProductKind.BOT,
        "memory_mb": 256,
        "cpu_percent": 25,
        "disk_mb": 1024,
        "description": "A small Discord bot in any runtime.",
        "prices": [price("EUR", 149), price("USD", 169)],
    },
    {
        "name": "Bot 512 MB",
        "kind": ProductKind.BOT,
        "memory_mb": 512,
        "cpu_percent": 50,
        "disk_mb": 2048,
        "description": "A Discord bot with room for a database cache or music.",
        "prices": [price("EUR", 249), price("USD", 279)],
    },
]
# Buyers' countries' rates (the default seller is in BE); New York's sales tax by its region.
TAX_RATES = [
    {"country": "DE", "percentage": "19", "display_name": "VAT"},
    {"country": "BE", "percentage": "21", "display_name": "VAT"},
    {"country": "NL", "percentage": "21", "display_name": "VAT"},
    {"country": "FR", "percentage": "20", "display_name": "VAT"},
    {"country": "US", "region": "US-NY", "percentage": "8.875", "display_name": "Sales tax"},
]
PROMOTION_CODE = "WELCOME10"
COUPON = {"name": "Welcome: 10 % off the first invoice", "duration": CouponDuration.ONCE}
# A German business: its valid-format VAT id is reverse charged when the seller is in another
# member state (the default BILLING_SELLER_COUNTRY, BE), and charged German VAT by a German one.
DEMO_PROFILE = BillingProfileChanges(
    legal_name="Pixelforge Gaming GmbH",
    email="billing@pixelforge.example",
    address_line1="Friedrichstraße 68",
    postal_code="10117",
    city="Berlin",
    country="DE",
    vat_id="DE136695976",
)
DEMO_CREDIT = 5000  # minor units of the account's billing currency: 50.00 EUR
DEMO_CREDIT_DESCRIPTION = "Demo credit (seed_billing_demo)"


class Command(BaseCommand):
    help = (
        "Add a billing catalogue (game-server and bot plans with EUR and USD prices, tax rates, "
        "the WELCOME10 promotion code) and give the demo account of an e-mail address a billing "
        "profile and 50.00 EUR of credit. Run after seed_demo; running it again adds nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--email", default="demo@example.com")

    def handle(self, *args, email, **options):
        account = Account.objects.filter(
            memberships__user__email__iexact=email, memberships__role=Role.OWNER
        ).first()
        if account is None:
            raise CommandError(f"No account is owned by {email}; run seed_demo first.")
        try:
            with transaction.atomic():
                added = self._catalogue()
                profile_set = self._profile(account)
                credit = self._credit(account)
        except ApplicationError as refused:
            raise CommandError(f"A billing service refused the demo data: {refused}") from None
        summary = ", ".join(
            f"{count} {what}{'' if count == 1 else 's'}" for what, count in added.items() if count
        )
        self.stdout.write(f"Billing catalogue: {summary or 'complete, nothing added'}.")
        if profile_set:
            self.stdout.write(f"Set the billing profile of {account.id}.")
        if credit:
            amount = format_amount(credit.amount, credit.currency)
            self.stdout.write(f"Added {amount} of credit to {account.id}.")

    def _catalogue(self) -> dict[str, int]:
        added = {"product": 0, "price": 0, "tax rate": 0, "promotion code": 0}
        for plan in reversed(PLANS):
            fields = {key: value for key, value in plan.items() if key != "prices"}
            product = Product.objects.filter(name=plan["name"]).order_by("created_at").first()
            if product is None:
                product = product_create(**fields, actor=SYSTEM)
                added["product"] += 1
            elif not product.active:
                continue  # staff archived it: it is not for sale again
            for spec in plan["prices"]:
                if not Price.objects.filter(product=product, active=True, **spec).exists():
                    price_create(product=product, **spec, actor=SYSTEM)
                    added["price"] += 1
        for rate in TAX_RATES:
            place = {"country": rate["country"], "region": rate.get("region", "")}
            if not TaxRate.objects.filter(**place, active=True).exists():
                tax_rate_create(**rate, actor=SYSTEM)
                added["tax rate"] += 1
        if not PromotionCode.objects.filter(code__iexact=PROMOTION_CODE).exists():
            coupon = coupon_create(**COUPON, percent_off=10, actor=SYSTEM)
            promotion_code_create(coupon=coupon, code=PROMOTION_CODE, actor=SYSTEM)
            added["promotion code"] += 1
        return added

    def _profile(self, account: Account) -> bool:
        """Set the demo profile unless the account has a profile of its own already."""
        profile = BillingProfile.objects.filter(account=account).first()
        if profile is not None and (profile.legal_name or profile.country):
            return False
        billing_profile_update(account=account, changes=DEMO_PROFILE, actor=SYSTEM)
        return True

    def _credit(self, account: Account) -> BalanceTransaction | None:
        """The demo credit, once: in the account's billing currency when it has one."""
        given = BalanceTransaction.objects.filter(
            account=account,
            kind=BalanceTransaction.Kind.ADJUSTMENT,
            description=DEMO_CREDIT_DESCRIPTION,
        )
        if given.exists():
            return None
        profile = BillingProfile.objects.filter(account=account).first()
        return balance_change(
            account=account,
            amount=DEMO_CREDIT,
            currency=(profile and profile.currency) or "EUR",
            kind=BalanceTransaction.Kind.ADJUSTMENT,
            description=DEMO_CREDIT_DESCRIPTION,
            actor=SYSTEM,
        )
