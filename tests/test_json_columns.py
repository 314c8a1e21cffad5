"""JSON columns read by orjson where it reads them as Python's ``json`` does
(``hosting.fields.json_read``) answer exactly what Django's ``JSONField.from_db_value`` answers,
and ``json_copy`` copies as ``deepcopy`` does."""

import json
import math
from copy import deepcopy

import pytest
from django.db import models
from django.db.models.fields.json import KeyTransform

from hosting.fields import NOT_READ, StorableJSONField, json_read
from hosting.queries import _kept_converter
from hosting.representations import json_copy

TEXTS = [
    "{}",
    "[]",
    '{"a": 1, "b": [1, 2.5, -0, -0.0, 1e-7, 12345678901234567], "c": {"d": null}}',
    '{"a": true, "b": false, "c": "x", "d": ""}',
    '{"dup": 1, "dup": 2}',
    '"text"',
    "17",
    "-3.25",
    "1E5",
    "0.1",
    "1.7976931348623157e308",
    " [1 , 2 ] ",
    '{"é": "ü \\u00e9 😀 \\ud83d\\ude00", "tab": "\\t\\n\\"\\\\/"}',
    '{"nul": "\\u0000"}',
    "123456789012345678901234567890",  # past 64 bits: orjson refuses, json reads it
    "[18446744073709551615, -9223372036854775808, 9223372036854775807]",
    "[1234567890123456789, 12345678901234567890, -99999999999999999999]",
    '{"id": "12345678901234567890123", "n": 1}',  # digits in a string: json reads it, alike
    "[0.30000000000000004, 2.2250738585072014e-308, 5e-324, 123456789.123456789, 1e22]",
    "[4.35, 0.1e1, 1.0, -1.5e-10, 9007199254740993, 1.00000000000000011102230246251565]",
    '{"n": NaN, "i": Infinity, "m": -Infinity}',  # not JSON; Python's json reads them
    "1e400",
    '"\\ud800 alone"',  # an unpaired surrogate escaped
    "\ud800",  # an unpaired surrogate itself: not UTF-8
    "not json",
    "",
    "{'single': 1}",
    "[1, 2,]",
]


def _same(a, b) -> bool:
    """Equal, with the same types throughout (1 is not 1.0 here) and NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


@pytest.mark.parametrize("text", TEXTS)
def test_a_json_column_reads_as_djangos_json_field_reads_it(text):
    field = models.JSONField()
    expected = field.from_db_value(text, None, None)
    read = json_read(text)
    assert read is NOT_READ or _same(read, expected)
    assert _same(_kept_converter(field.from_db_value)(text, None, None), expected)
    transform = KeyTransform("k", "data")
    kept = _kept_converter(field.from_db_value)(text, transform, None)
    assert _same(kept, field.from_db_value(text, transform, None))


def test_orjson_reads_the_common_texts_and_leaves_the_rest():
    assert json_read('{"a": [1, 2.5, null, true, "é"]}') == {"a": [1, 2.5, None, True, "é"]}
    for text in ("1e400", "[NaN]", "12345678901234567890", '"\\ud800"', "x", "\ud800", b"{}"):
        assert json_read(text) is NOT_READ, text
    assert json_read(None) is NOT_READ


def test_none_a_key_transforms_sql_value_and_a_decoder_of_its_own_as_django():
    for field in (models.JSONField(), StorableJSONField()):
        converter = _kept_converter(field.from_db_value)
        assert converter(None, None, None) is None
        assert field.from_db_value(None, None, None) is None
        transform = KeyTransform("k", "data")
        for value in (5, 2.5, True):
            assert converter(value, transform, None) == value
            assert field.from_db_value(value, transform, None) == value

    class Decoder(json.JSONDecoder):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, parse_float=str, **kwargs)

    for decoded in (models.JSONField(decoder=Decoder), StorableJSONField(decoder=Decoder)):
        text = '{"x": 1.5}'
        assert _kept_converter(decoded.from_db_value)(text, None, None) == {"x": "1.5"}
        assert decoded.from_db_value(text, None, None) == {"x": "1.5"}


def test_the_kept_converter_of_a_plain_json_field_is_orjsons_and_others_stay():
    field = models.JSONField()
    kept = _kept_converter(field.from_db_value)
    assert kept is not field.from_db_value and kept.__name__ == "json_column"
    storable = StorableJSONField()
    assert _kept_converter(storable.from_db_value) == storable.from_db_value
    other = models.DateTimeField().get_db_converters
    assert _kept_converter(other) is other


def test_a_storable_json_field_still_repairs_unstorable_text():
    field = StorableJSONField()
    assert field.from_db_value('{"a": "x\\u0000y", "\\ud800": 1}', None, None) == {
        "a": "x\ufffdy",
        "\ufffd": 1,
    }
    assert field.from_db_value('{"a": "😀"}', None, None) == {"a": "😀"}


VALUES = [
    None,
    {"a": [1, {"b": [2, 3]}, "c"], "d": {"e": None, "f": 1.5, "g": True}},
    [[], {}, [[1]]],
    "text",
    7,
    {"t": (1, [2]), "s": {3}},  # not JSON-shaped: copied by deepcopy
]


@pytest.mark.parametrize("value", VALUES)
def test_json_copy_copies_as_deepcopy_and_shares_nothing_mutable(value):
    copied = json_copy(value)
    assert copied == deepcopy(value)

    def mutables(item, found):
        if isinstance(item, dict | list | set):
            found.append(item)
            for child in item.values() if isinstance(item, dict) else item:
                mutables(child, found)
        elif isinstance(item, tuple):
            for child in item:
                mutables(child, found)
        return found

    originals = {id(item) for item in mutables(value, [])}
    assert not originals & {id(item) for item in mutables(copied, [])}
