"""The account's credit: its ledger's entries, the balance, and the body with which staff add or
take away credit.
"""

from rest_framework import serializers

from billing.api.serializers.fields import AMOUNT_MAX, CurrencyField
from billing.models import BalanceTransaction
from billing.representations import balance_transaction_representation
from hosting.api.serializers import RepresentedBy, StrictInputSerializer


class BalanceTransactionSerializer(RepresentedBy, serializers.ModelSerializer):
    represent = staticmethod(balance_transaction_representation)

    invoice = serializers.CharField(source="invoice_id", read_only=True, allow_null=True)
    credit_note = serializers.CharField(source="credit_note_id", read_only=True, allow_null=True)

    class Meta:
        model = BalanceTransaction
        fields = [
            "id",
            "kind",
            "amount",
            "currency",
            "ending_balance",
            "description",
            "invoice",
            "credit_note",
            "created_at",
        ]
        read_only_fields = fields


class BalanceSerializer(serializers.Serializer):
    """The account's credit: the sum of its ledger (``GET /v1/balance-transactions``)."""

    available = serializers.IntegerField(
        read_only=True, help_text="Credit in minor units of `currency`; never negative."
    )
    currency = serializers.CharField(
        read_only=True,
        allow_null=True,
        help_text="The account's billing currency; null before its first invoice or credit.",
    )


class BalanceTransactionCreateSerializer(StrictInputSerializer):
    amount = serializers.IntegerField(
        min_value=-AMOUNT_MAX,
        max_value=AMOUNT_MAX,
        help_text="Credit to add (positive) or take away (negative), in minor units; not 0.",
    )
    currency = CurrencyField(
        help_text="The account's billing currency (set by this entry if it has none yet)."
    )
    description = serializers.CharField(max_length=500, help_text="Why: shown to the customer.")
