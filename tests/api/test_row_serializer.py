"""RowListSerializer and a list view's ``shown_as_rows``: plain rows come out exactly as the
child serializer shows them."""

import datetime
import zoneinfo

import pytest
from rest_framework import serializers

from hosting.api import serializers as row_serializers
from hosting.api.serializers import RowListSerializer, shown_as_rows
from servers.api.serializers import SERVER_LIST_COLUMNS, ServerSerializer
from servers.selectors import servers_of_account
from tests.factories import ServerFactory


class KindsSerializer(serializers.Serializer):
    """One field of each kind the plan handles itself."""

    text = serializers.CharField()
    number = serializers.IntegerField()
    flag = serializers.BooleanField()
    colour = serializers.ChoiceField(choices=["red", "green"])
    at = serializers.DateTimeField()
    renamed = serializers.CharField(source="other")

    class Meta:
        list_serializer_class = RowListSerializer


class NeedsTheChildSerializer(KindsSerializer):
    """A field the plan cannot take (a custom format) sends every row through DRF."""

    custom = serializers.DateTimeField(format="%d/%m/%Y", source="at")


BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")
ROWS = [
    {
        "text": "a",
        "number": 7,
        "flag": True,
        "colour": "red",
        "at": datetime.datetime(2026, 11, 21, 19, 50, 1, 999999, tzinfo=datetime.UTC),
        "other": "x",
    },
    {  # a non-UTC time is shown in UTC; None stays None
        "text": "b",
        "number": None,
        "flag": False,
        "colour": "green",
        "at": datetime.datetime(2026, 7, 1, 0, 30, tzinfo=BERLIN),
        "other": None,
    },
]


def _drf(serializer_class, rows):
    return [serializer_class().to_representation(row) for row in rows]


@pytest.mark.parametrize("serializer_class", [KindsSerializer, NeedsTheChildSerializer])
def test_rows_are_shown_exactly_as_the_child_shows_them(serializer_class):
    fast = serializer_class(ROWS, many=True).data

    assert isinstance(serializer_class(many=True), RowListSerializer)
    assert fast == _drf(serializer_class, ROWS)
    assert fast[1]["at"] == "2026-06-30T22:30:00Z"


def test_the_plan_is_made_once_per_serializer_class():
    # Each builds its plan here, whatever ran before in this process.
    KindsSerializer(ROWS, many=True).data  # noqa: B018 - builds the plan
    NeedsTheChildSerializer(ROWS, many=True).data  # noqa: B018 - finds it has none
    plan = row_serializers._plans[KindsSerializer]

    assert [name for name, _, _ in plan] == ["text", "number", "flag", "colour", "at", "renamed"]
    assert row_serializers._plans[NeedsTheChildSerializer] is None


class NotRowsSerializer(serializers.Serializer):
    """Its list serializer is DRF's own: a view serializes its pages as usual."""

    text = serializers.CharField()


def test_a_view_shows_a_page_of_rows_as_the_serializer_would_without_building_one():
    assert shown_as_rows(KindsSerializer, ROWS) == KindsSerializer(ROWS, many=True).data
    assert shown_as_rows(KindsSerializer, []) == []
    # Not shown this way: a serializer that needs the child, one whose list is not of rows,
    # a page of model instances.
    assert shown_as_rows(NeedsTheChildSerializer, ROWS) is None
    assert shown_as_rows(NotRowsSerializer, ROWS) is None
    assert shown_as_rows(KindsSerializer, [object()]) is None


def test_the_server_list_rows_match_the_model_serializer(account):
    ServerFactory.create_batch(3, account=account)
    queryset = servers_of_account(account_id=account.pk).order_by("-created_at", "-id")

    rows = ServerSerializer(list(queryset.values(*SERVER_LIST_COLUMNS)), many=True).data
    models = [ServerSerializer(server).data for server in queryset]

    assert rows == models


@pytest.mark.django_db
def test_a_page_of_a_represented_resource_is_shown_by_its_function_as_drf_would(account):
    from billing.api.serializers.invoices import InvoiceSerializer
    from billing.models import Invoice
    from servers.api.serializers import BotSerializer
    from servers.models import Bot
    from tests.factories import BotFactory, InvoiceFactory

    BotFactory.create_batch(2, account=account, environment={"A": [1, {"b": None}]})
    BotFactory(account=account, source_type="upload", source_archive="bots/a/code.zip")
    InvoiceFactory.create_batch(2, account=account)
    for serializer_class, rows in (
        (BotSerializer, list(Bot.objects.filter(account=account))),
        (InvoiceSerializer, list(Invoice.objects.filter(account=account))),
    ):
        shown = shown_as_rows(serializer_class, rows)
        assert shown == serializer_class(rows, many=True).data
        assert len(shown) == len(rows) > 1
        assert shown_as_rows(serializer_class, []) == []

    class OwnShowing(BotSerializer):
        def to_representation(self, instance):
            return {"id": instance.id}

    class OwnList(BotSerializer):
        class Meta(BotSerializer.Meta):
            list_serializer_class = serializers.ListSerializer

    class OwnMany(BotSerializer):
        @classmethod
        def many_init(cls, *args, **kwargs):
            return super().many_init(*args, **kwargs)

    bots = list(Bot.objects.filter(account=account))
    for serializer_class in (OwnShowing, OwnList, OwnMany):
        assert shown_as_rows(serializer_class, bots) is None  # serialized by DRF, as declared
