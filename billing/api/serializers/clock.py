"""An account's test clock, and the body that moves it."""

from rest_framework import serializers

from hosting.api.serializers import StrictInputSerializer


class BillingClockSerializer(serializers.Serializer):
    """An account's test clock and what the billing job did while moving it."""

    customer = serializers.CharField(read_only=True, help_text="The account (`acct_...`).")
    now = serializers.DateTimeField(read_only=True, help_text="The account's billing time.")
    runs = serializers.IntegerField(
        read_only=True, help_text="How many times the billing job ran on the way (0 on a GET)."
    )
    counts = serializers.DictField(
        child=serializers.IntegerField(),
        read_only=True,
        help_text="What those runs did, by step (`renewals`, `collection_attempts`, "
        "`suspended`, `terminated`, ...).",
    )


class BillingClockAdvanceSerializer(StrictInputSerializer):
    to = serializers.DateTimeField(
        help_text="The account's new billing time (ISO 8601): where a new clock starts, or a "
        "later moment an existing one moves to."
    )
