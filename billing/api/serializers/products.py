"""Products and their prices: what the catalogue shows, and the bodies with which staff make
and change them (``/v1/admin/products``, ``/v1/admin/prices``).

Each body is read here (its fields and JSON types); what a value may be (a game that exists, a
resource within limits) is the catalogue services' rule (``billing.services.catalogue``),
answered as 400 ``validation_failed`` naming the field or 409 ``conflict``.
"""

from rest_framework import serializers

from billing.api.serializers.fields import CurrencyField, catalogue_amount
from billing.models import INTERVAL_CHOICES, Price, Product, ProductKind
from billing.representations import price_representation, product_representation
from billing.rules.periods import MAX_INTERVAL_COUNT
from billing.services.catalogue import BACKUP_LIMITS, COUNT_LIMITS, MAX_DUNNING_DAYS, MAX_TRIAL_DAYS
from hosting.api.serializers import RepresentedBy, StrictInputSerializer
from servers.api.serializers import ResourcesInputSerializer
from servers.models import RESOURCE_LIMITS


class PriceRecurringSerializer(serializers.Serializer):
    interval = serializers.ChoiceField(choices=INTERVAL_CHOICES, read_only=True)
    interval_count = serializers.IntegerField(read_only=True)


class PriceSerializer(RepresentedBy, serializers.ModelSerializer):
    """What a product costs in one currency, every ``interval_count`` ``interval``s."""

    represent = staticmethod(price_representation)

    product = serializers.CharField(source="product_id", read_only=True)
    recurring = PriceRecurringSerializer(source="*", read_only=True)

    class Meta:
        model = Price
        fields = [
            "id",
            "product",
            "currency",
            "unit_amount",
            "recurring",
            "setup_fee",
            "trial_days",
            "active",
            "created_at",
        ]
        read_only_fields = fields


class ProductResourcesSerializer(serializers.Serializer):
    memory_mb = serializers.IntegerField(read_only=True)
    cpu_percent = serializers.IntegerField(read_only=True)
    disk_mb = serializers.IntegerField(read_only=True)


class ProductBackupsSerializer(serializers.Serializer):
    limit = serializers.IntegerField(
        source="backup_limit", read_only=True, help_text="Backups each server or bot may keep."
    )
    storage_mb = serializers.IntegerField(
        source="backup_storage_mb", read_only=True, help_text="MB their backups may take in all."
    )


class ProductSchedulesSerializer(serializers.Serializer):
    limit = serializers.IntegerField(
        source="schedule_limit", read_only=True, help_text="Schedules each server or bot may have."
    )


class ProductDatabasesSerializer(serializers.Serializer):
    limit = serializers.IntegerField(
        source="database_limit", read_only=True, help_text="Databases each server or bot may have."
    )


class ProductAllocationsSerializer(serializers.Serializer):
    limit = serializers.IntegerField(
        source="allocation_limit",
        read_only=True,
        help_text="Allocations (ip:port) each server may hold, its primary one included.",
    )


def product_for_sale_representation(product: Product) -> dict:
    """A product with its active prices (``billing.selectors.products_for_sale`` reads them)."""
    return product_representation(product, prices=product.active_prices)


class ProductSerializer(RepresentedBy, serializers.ModelSerializer):
    """A plan and what it provisions, with the prices it is sold at."""

    represent = staticmethod(product_for_sale_representation)

    resources = ProductResourcesSerializer(source="*", read_only=True)
    backups = ProductBackupsSerializer(source="*", read_only=True)
    schedules = ProductSchedulesSerializer(source="*", read_only=True)
    databases = ProductDatabasesSerializer(source="*", read_only=True)
    allocations = ProductAllocationsSerializer(source="*", read_only=True)
    games = serializers.ListField(
        child=serializers.CharField(), read_only=True, help_text="Games allowed; empty: any."
    )
    regions = serializers.ListField(
        child=serializers.CharField(), read_only=True, help_text="Regions allowed; empty: any."
    )
    runtimes = serializers.ListField(
        child=serializers.CharField(), read_only=True, help_text="Bot runtimes; empty: any."
    )
    prices = PriceSerializer(source="active_prices", many=True, read_only=True)

    class Meta:
        model = Product
        fields = [
            "id",
            "name",
            "description",
            "kind",
            "resources",
            "backups",
            "schedules",
            "databases",
            "allocations",
            "games",
            "regions",
            "runtimes",
            "active",
            "created_at",
            "prices",
        ]
        read_only_fields = fields


def _slugs(text: str) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.CharField(max_length=64), max_length=100, required=False, help_text=text
    )


def _days(field: str, text: str) -> serializers.IntegerField:
    low = 0 if field == "suspend_after_days" else 1
    return serializers.IntegerField(
        required=False, allow_null=True, min_value=low, max_value=MAX_DUNNING_DAYS, help_text=text
    )


def _resource(name: str) -> serializers.IntegerField:
    low, high = RESOURCE_LIMITS[name]
    return serializers.IntegerField(min_value=low, max_value=high)


SUSPEND_DAYS = "Days overdue before suspension; null: the global setting."
TERMINATE_DAYS = "Days overdue before termination (after suspension); null: the global setting."


class ProductResourcesInputSerializer(StrictInputSerializer):
    memory_mb = _resource("memory_mb")
    cpu_percent = _resource("cpu_percent")
    disk_mb = _resource("disk_mb")


class ProductBackupsInputSerializer(StrictInputSerializer):
    limit = serializers.IntegerField(
        min_value=0, max_value=BACKUP_LIMITS["backup_limit"], required=False
    )
    storage_mb = serializers.IntegerField(
        min_value=0, max_value=BACKUP_LIMITS["backup_storage_mb"], required=False
    )


class ProductCountInputSerializer(StrictInputSerializer):
    limit = serializers.IntegerField(min_value=0, max_value=COUNT_LIMITS["schedule_limit"])


class ProductAllocationsInputSerializer(StrictInputSerializer):
    limit = serializers.IntegerField(min_value=1, max_value=COUNT_LIMITS["allocation_limit"])


class ProductCreateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=100)
    kind = serializers.ChoiceField(choices=ProductKind.choices)
    description = serializers.CharField(max_length=500, required=False, allow_blank=True)
    resources = ProductResourcesInputSerializer(
        help_text="What each server or bot of the plan gets, within the service's limits."
    )
    games = _slugs("Server plans: the games it runs (slugs of GET /v1/games); empty: any.")
    regions = _slugs("The regions it runs in (GET /v1/regions); empty: any.")
    runtimes = _slugs("Bot plans: the runtimes it allows; empty: any.")
    suspend_after_days = _days("suspend_after_days", SUSPEND_DAYS)
    terminate_after_days = _days("terminate_after_days", TERMINATE_DAYS)
    backups = ProductBackupsInputSerializer(
        required=False, help_text="Backups each server or bot may keep; by default 3 and 10 GB."
    )
    schedules = ProductCountInputSerializer(
        required=False, help_text="Schedules each server or bot may have; by default 5."
    )
    databases = ProductCountInputSerializer(
        required=False, help_text="Databases each server or bot may have; by default 1."
    )
    allocations = ProductAllocationsInputSerializer(
        required=False,
        help_text="Allocations (ip:port) each server may hold, its primary included; by default 1.",
    )


class ProductUpdateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=100, required=False)
    kind = serializers.ChoiceField(choices=ProductKind.choices, required=False)
    description = serializers.CharField(max_length=500, required=False, allow_blank=True)
    resources = ResourcesInputSerializer(required=False)
    games = _slugs("Games it runs; empty: any.")
    regions = _slugs("Regions it runs in; empty: any.")
    runtimes = _slugs("Bot runtimes; empty: any.")
    suspend_after_days = _days("suspend_after_days", SUSPEND_DAYS)
    terminate_after_days = _days("terminate_after_days", TERMINATE_DAYS)
    backups = ProductBackupsInputSerializer(
        required=False, help_text="Backups each server or bot may keep (count, MB in all)."
    )
    schedules = ProductCountInputSerializer(
        required=False, help_text="Schedules each server or bot may have."
    )
    databases = ProductCountInputSerializer(
        required=False, help_text="Databases each server or bot may have."
    )
    allocations = ProductAllocationsInputSerializer(
        required=False,
        help_text="Allocations (ip:port) each server may hold, its primary included.",
    )


class PriceCreateSerializer(StrictInputSerializer):
    currency = CurrencyField(help_text="ISO 4217, any case.")
    unit_amount = catalogue_amount(0, "Per period, in minor units (0: free).")
    interval = serializers.ChoiceField(choices=INTERVAL_CHOICES)
    interval_count = serializers.IntegerField(
        required=False,
        default=1,
        min_value=1,
        max_value=max(MAX_INTERVAL_COUNT.values()),
        help_text="Intervals per period: three years at most (36 months, 156 weeks, ...).",
    )
    setup_fee = catalogue_amount(
        0, "Charged once, on the first invoice.", required=False, default=0
    )
    trial_days = serializers.IntegerField(
        required=False, default=0, min_value=0, max_value=MAX_TRIAL_DAYS
    )
