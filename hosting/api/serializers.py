"""Serializer plumbing shared by every app's API."""

from collections.abc import Mapping

from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail


class StrictInputSerializer(serializers.Serializer):
    """A request body that refuses keys it does not declare, instead of silently ignoring them.

    A customer sending ``max_api_keys`` must learn that it was not applied.
    """

    def to_internal_value(self, data):
        unknown = sorted(set(data) - set(self.fields)) if isinstance(data, Mapping) else []
        errors = {
            name: [ErrorDetail("This field is not accepted here.", code="unknown_field")]
            for name in unknown
        }
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if isinstance(exc.detail, dict):
                raise serializers.ValidationError({**exc.detail, **errors}) from None
            raise
        if errors:
            raise serializers.ValidationError(errors)
        return value
