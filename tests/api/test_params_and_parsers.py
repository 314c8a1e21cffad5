"""The shared parsers on their own: query parameters, JSON bodies and the text rule."""

import io
import json

import pytest
from django.http import QueryDict

from hosting.api.params import integer_value, list_value, single_value
from hosting.api.parsers import MAX_DEPTH, StrictJSONParser, check_body
from hosting.errors import InvalidJson, InvalidParameter, ValidationFailed
from hosting.text import storable, storable_data, text_problem


def refused(call) -> tuple[str, str]:
    with pytest.raises(InvalidParameter) as raised:
        call()
    (problem,) = raised.value.details["parameters"]
    return problem["name"], problem["code"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", 7),
        ("n=1", 1),
        ("n=0010", 10),
        ("n=100", 100),
        ("n=00000000000000000000000000000042", 42),
    ],
)
def test_integer_value_reads_plain_digits(query, expected):
    assert integer_value(QueryDict(query), "n", default=7, minimum=1, maximum=100) == expected


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("n=101", "max_value"),
        ("n=0", "min_value"),
        ("n=-5", "min_value"),
        ("n=1.0", "invalid"),
        ("n=1e3", "invalid"),
        ("n=%EF%BC%91", "invalid"),
        ("n=", "blank"),
        ("n=1&n=1", "multiple_values"),
        ("n=" + "1" * 10_000, "max_value"),
    ],
)
def test_integer_value_refuses_anything_else(query, code):
    call = lambda: integer_value(QueryDict(query), "n", default=1, minimum=1, maximum=100)  # noqa: E731
    assert refused(call) == ("n", code)


def test_list_value_joins_comma_lists_and_repeated_keys():
    assert list_value(QueryDict("s=a,b&s=c&s= d "), "s") == ["a", "b", "c", "d"]
    assert list_value(QueryDict(""), "s") is None


@pytest.mark.parametrize("query", ["s=", "s=a,", "s=,a", "s=a,,b", "s=a&s=", "s=a, ,b"])
def test_list_value_refuses_empty_items(query):
    assert refused(lambda: list_value(QueryDict(query), "s")) == ("s", "blank")


def test_single_value_refuses_nul():
    assert refused(lambda: single_value(QueryDict("q=a%00"), "q")) == ("q", "null_characters")


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("fine ✓ 😀", None),
        ("a\x00", "null_characters"),
        ("\ud800", "invalid_unicode"),
        ("x\udfff", "invalid_unicode"),
        ("\x01\x1f", None),
    ],
)
def test_text_problem_names_what_no_database_stores(value, problem):
    found = text_problem(value)
    assert (found[0] if found else None) == problem
    if found:
        assert value not in found[1]


def test_storable_replaces_only_the_bad_characters():
    assert storable("a\x00b\ud800c😀") == "a\ufffdb\ufffdc😀"
    assert storable_data({"\ud800": ["\x00", 1, {"k": "ok"}]}) == {
        "\ufffd": ["\ufffd", 1, {"k": "ok"}]
    }


def parse(raw: bytes):
    return StrictJSONParser().parse(io.BytesIO(raw), parser_context={"encoding": "utf-8"})


def test_the_parser_reads_json_up_to_its_depth_limit():
    levels = MAX_DEPTH
    assert parse(("[" * levels + "]" * levels).encode()) is not None


def test_the_parser_reads_ordinary_json():
    assert parse(b'{"a": [1, 2.5, "x", true, null, {"b": -9223372036854775808}]}') == {
        "a": [1, 2.5, "x", True, None, {"b": -(2**63)}]
    }


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 100_000,
        b"{" * 10,
        b"NaN",
        b"[Infinity]",
        b'{"a": -Infinity}',
        b"\xff\xfe",
        b'{"a": 1' + b"0" * 5000 + b"}",
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)).encode(),
    ],
)
def test_the_parser_refuses_what_is_not_plain_json(raw):
    """Unclosed, too deep (33 levels), not JSON's numbers, not UTF-8, too many digits."""
    with pytest.raises(InvalidJson):
        parse(raw)


@pytest.mark.parametrize(
    ("data", "fields"),
    [
        ({"a": "x\x00"}, [("a", "null_characters")]),
        ({"a": {"b": ["ok", "\ud800"]}}, [("a.b.1", "invalid_unicode")]),
        ({"\x00": 1, "b": 2**63}, [("body", "null_characters"), ("b", "out_of_range")]),
        ({"a": float("inf")}, [("a", "out_of_range")]),
        (["\ud800"], [("0", "invalid_unicode")]),
    ],
)
def test_check_body_names_each_unstorable_value_by_its_path(data, fields):
    with pytest.raises(ValidationFailed) as raised:
        check_body(data)
    found = [(item["name"], item["code"]) for item in raised.value.details["fields"]]
    assert found == fields
    json.dumps(raised.value.details, ensure_ascii=False).encode("utf-8")  # encodable as it is
