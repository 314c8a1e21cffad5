"""CSV formula neutralising (hosting/csv_export.py): no cell a spreadsheet splits out of our
text may begin with something it runs as a formula, whatever comes before it (spaces,
invisible characters, a list separator) and whatever form the character takes (fullwidth,
small)."""

import csv
import io
import unicodedata

import pytest

from hosting.csv_export import csv_cell, csv_text

FORMULA = ("=", "+", "-", "@")
# The forms a spreadsheet (or an input method) folds into a formula character.
LOOKALIKES = (
    "\uff1d",
    "\uff0b",
    "\uff0d",
    "\uff20",  # fullwidth = + - @
    "\ufe66",
    "\ufe62",
    "\ufe63",
    "\ufe6b",  # small = + - @
    "\u207c",
    "\u207a",
    "\u208a",
    "\u208c",  # superscript = +, subscript + =
)
# What may stand before it and still leave it the cell's first visible character.
LEADING = ("", " ", "  ", "\u00a0", "\u3000", "\u2003", "\n", "\u200b", "\ufeff", "\u200e", "\x00")
# What a spreadsheet may split a line's text into cells at (by locale or import choice).
SEPARATORS = (";", ",", "\t", "\r", "\n", "\uff1b", "\uff0c", "\u037e")
PAYLOAD = '1+1|cmd!A0 HYPERLINK("http://evil.example")'


def cells_a_spreadsheet_sees(text: str) -> list[str]:
    """``text`` cut at every separator any locale or import dialog may use, each piece with
    its leading blanks and invisible characters dropped, in the NFKC form (the fullwidth
    equals sign is ``=``): what could be a cell's start."""
    pieces, piece = [], []
    for character in text:
        folded = unicodedata.normalize("NFKC", character)
        if folded in {";", ",", "\t", "\r", "\n"}:
            pieces.append("".join(piece))
            piece = []
        else:
            piece.append(folded)
    pieces.append("".join(piece))
    return [
        "".join(
            piece[index:]
            for index in [
                next(
                    (
                        i
                        for i, c in enumerate(piece)
                        if not (c.isspace() or unicodedata.category(c) in ("Cc", "Cf"))
                    ),
                    len(piece),
                )
            ]
        )
        for piece in pieces
    ]


def assert_inert(cell: str) -> None:
    for piece in cells_a_spreadsheet_sees(cell):
        assert not piece.startswith(FORMULA), (cell, piece)


def written(value):
    """The cell as it is read back from the CSV text we write."""
    return next(csv.reader(io.StringIO(csv_text(["x"], [[value]])).readlines()[1:]))[0]


@pytest.mark.parametrize("leading", LEADING, ids=repr)
@pytest.mark.parametrize("start", FORMULA + LOOKALIKES + ("\t", "\r"), ids=repr)
def test_a_cell_beginning_with_a_formula_character_is_inert(leading, start):
    value = leading + start + PAYLOAD
    cell = written(value)
    assert_inert(cell)
    assert cell.startswith("'")
    assert cell.replace("'", "") == value  # only quotes were added: the text is what was stored


@pytest.mark.parametrize("separator", SEPARATORS, ids=repr)
@pytest.mark.parametrize("leading", ("", " ", "\u3000", "\u200b"), ids=repr)
@pytest.mark.parametrize("start", FORMULA + LOOKALIKES[:4], ids=repr)
def test_a_formula_after_a_list_separator_is_inert(separator, leading, start):
    value = "Survival" + separator + leading + start + PAYLOAD
    cell = written(value)
    assert_inert(cell)
    assert cell.replace("'", "") == value.replace("'", "")


@pytest.mark.parametrize(
    "value",
    [
        "Survival SMP",
        "Server - EU",
        "a-b",
        "x@example.com",
        "100%",
        "2026-11",
        "1+1",
        "Ärger",
        "名前",
        "",
        "' quoted",
        "Creative; peaceful",
        "a, b and c",
    ],
)
def test_ordinary_text_is_left_as_it_is(value):
    assert csv_cell(value) == value
    assert written(value) == value


@pytest.mark.parametrize("value", [-500, 0, 12.5, -0.25])
def test_numbers_stay_numbers(value):
    assert csv_cell(value) == value


def test_none_is_an_empty_cell():
    assert csv_cell(None) == ""


def test_the_header_is_neutralised_too():
    header = csv_text(["=name", "ok"], []).splitlines()[0]
    assert header == "'=name,ok"
