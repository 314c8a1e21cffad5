"""Credit notes, and the body with which staff issue one."""

from rest_framework import serializers

from billing.api.serializers.fields import AMOUNT_MAX
from billing.models import CreditNote
from billing.representations import credit_note_representation
from hosting.api.serializers import RepresentedBy, StrictInputSerializer


class CreditNoteSerializer(RepresentedBy, serializers.ModelSerializer):
    represent = staticmethod(credit_note_representation)

    invoice = serializers.CharField(source="invoice_id", read_only=True)

    class Meta:
        model = CreditNote
        fields = [
            "id",
            "number",
            "invoice",
            "currency",
            "amount",
            "reason",
            "memo",
            "refund_to",
            "created_at",
        ]
        read_only_fields = fields


class CreditNoteCreateSerializer(StrictInputSerializer):
    invoice = serializers.CharField(max_length=64, help_text="The finalized invoice (`inv_...`).")
    amount = serializers.IntegerField(
        min_value=1, max_value=AMOUNT_MAX, help_text="In minor units of the invoice's currency."
    )
    reason = serializers.ChoiceField(choices=CreditNote.Reason.choices)
    refund_to = serializers.ChoiceField(
        choices=CreditNote.RefundTo.choices,
        help_text="`none`: forgive what is still owed; `balance`: give what was paid back as "
        "credit; `refunded`: record that what was paid went back outside (a transfer).",
    )
    memo = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
