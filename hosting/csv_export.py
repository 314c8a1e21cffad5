"""CSV downloads: written by the csv module (RFC 4180: quoted where needed, CRLF line ends), in
UTF-8, with text that a spreadsheet would run as a formula made inert.

A cell beginning with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read by Excel,
LibreOffice and Google Sheets as a formula (CSV injection: ``=HYPERLINK(...)`` in a server's
name); such text gets a leading ``'``, which the spreadsheet shows as text. Numbers are written
as they are: ``-500`` stays a number.
"""

import csv
import io
import re
from collections.abc import Iterable, Sequence
from typing import Any

from django.http import HttpResponse

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_UNSAFE_IN_FILENAME = re.compile(r"[^A-Za-z0-9._-]")


def csv_cell(value: Any) -> Any:
    """A value as its CSV cell: None empty, formula-like text escaped, the rest as it is."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
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
