"""CSV downloads: written by the csv module (RFC 4180: quoted where needed, CRLF line ends), in
UTF-8, with text that a spreadsheet would run as a formula made inert.

A cell beginning with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read by Excel,
LibreOffice and Google Sheets as a formula (CSV injection: ``=HYPERLINK(...)`` in a server's
name; OWASP's list). The same character counts when it comes:

- after blanks or invisible characters (spaces of any width, line breaks, zero-width spaces,
  byte-order and direction marks, control characters), which a spreadsheet may drop;
- in another form that folds to it (NFKC): fullwidth (U+FF1D, U+FF0B, U+FF0D, U+FF20, typed
  by East Asian input methods), small (U+FE66 ...) and super- or subscript (U+207A ...);
- after a list separator (``;`` or ``,``, also fullwidth, a tab or a line break): a
  spreadsheet set to a locale whose separator is ``;`` splits ``a;=1+1`` into two cells,
  whatever the quotes of our ``,``-separated file say.

Each such place gets a ``'`` in front, which the spreadsheet shows as text (at the cell's
start, the whole cell is text); nothing else of the text changes. Numbers are written as they
are: ``-500`` stays a number.
"""

import csv
import io
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from django.http import HttpResponse

FORMULA_STARTS = frozenset("=+-@\t\r")
# Where a spreadsheet may start a new cell inside our text (compared after NFKC, so the
# fullwidth semicolon U+FF1B is ";").
SEPARATORS = frozenset(";,\t\r\n")
_UNSAFE_IN_FILENAME = re.compile(r"[^A-Za-z0-9._-]")
_NEUTRAL = "'"


def _folded(character: str) -> str:
    return unicodedata.normalize("NFKC", character)[:1] if not character.isascii() else character


def _skipped(character: str) -> bool:
    """Blank or invisible: a spreadsheet may drop it before a cell's first character."""
    return character.isspace() or unicodedata.category(character) in ("Cc", "Cf")


def _runs_as_formula(text: str, start: int) -> bool:
    """Whether the cell a spreadsheet may begin at ``start`` begins with a formula."""
    for index in range(start, len(text)):
        character = text[index]
        if character in FORMULA_STARTS:  # tab and carriage return are formulas, not blanks
            return True
        if not _skipped(character):
            return _folded(character) in FORMULA_STARTS
    return False


def neutralised(text: str) -> str:
    """``text`` with a ``'`` before every cell a spreadsheet would run as a formula."""
    starts = [0] + [i + 1 for i, c in enumerate(text) if _folded(c) in SEPARATORS]
    unsafe = [start for start in starts if _runs_as_formula(text, start)]
    if not unsafe:
        return text
    pieces, previous = [], 0
    for start in unsafe:
        pieces += [text[previous:start], _NEUTRAL]
        previous = start
    pieces.append(text[previous:])
    return "".join(pieces)


def csv_cell(value: Any) -> Any:
    """A value as its CSV cell: None empty, formula-like text made inert, the rest as it is."""
    if value is None:
        return ""
    if isinstance(value, str):
        return neutralised(value)
    return value


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """``header`` and ``rows`` as CSV text, every cell through ``csv_cell``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([csv_cell(name) for name in header])
    writer.writerows([csv_cell(value) for value in row] for row in rows)
    return buffer.getvalue()


def csv_response(
    *, filename: str, header: Sequence[str], rows: Iterable[Sequence[Any]]
) -> HttpResponse:
    """A ``text/csv`` download of ``header`` and ``rows`` named ``filename`` (characters
    other than letters, digits, ``.``, ``_`` and ``-`` become ``_``)."""
    response = HttpResponse(csv_text(header, rows), content_type="text/csv; charset=utf-8")
    safe = _UNSAFE_IN_FILENAME.sub("_", filename)
    response["Content-Disposition"] = f'attachment; filename="{safe}"'
    return response
