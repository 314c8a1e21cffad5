"""Page-number pagination with the contract's ``data.pagination`` object (CONTRACT §4)."""

import datetime
import math
from collections.abc import Callable
from typing import Protocol
from urllib.parse import urlencode

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse
from rest_framework.pagination import BasePagination
from rest_framework.response import Response

from hosting.api.params import integer_value
from hosting.api.renderers import EnvelopeJSONRenderer, envelope

DEFAULT_PER_PAGE = 25
MAX_PER_PAGE = 100
# Far past any real list, and small enough that the offset it makes fits every database.
MAX_PAGE = 1_000_000_000
DEEP_OFFSET = 1000  # from here on a page is fetched as keys first, then rows

# The links' address by what builds it (``_link_base``), bounded.
_bases: dict[tuple, str] = {}
BASES_LIMIT = 1024


def _link_base(request) -> str:
    """The absolute address of the request's path, as ``build_absolute_uri`` makes it (which
    checks the host against ``ALLOWED_HOSTS`` each time), kept by everything it is made of: a
    host that fails the check raises before anything is kept."""
    meta = request.META
    key = (
        request.scheme,
        settings.USE_X_FORWARDED_HOST,
        settings.USE_X_FORWARDED_PORT,
        meta.get("HTTP_X_FORWARDED_HOST"),
        meta.get("HTTP_X_FORWARDED_PORT"),
        meta.get("HTTP_HOST"),
        meta.get("SERVER_NAME"),
        meta.get("SERVER_PORT"),
        request.path,
    )
    base = _bases.get(key)
    if base is None:
        base = request.build_absolute_uri(request.path)
        if len(_bases) >= BASES_LIMIT:
            _bases.clear()
        _bases[key] = base
    return base


PAGINATION_SCHEMA = {
    "type": "object",
    "required": ["page", "per_page", "total", "total_pages"],
    "properties": {
        "page": {"type": "integer", "minimum": 1, "example": 1},
        "per_page": {"type": "integer", "minimum": 1, "maximum": MAX_PER_PAGE, "example": 25},
        "total": {"type": "integer", "minimum": 0, "example": 1},
        "total_pages": {"type": "integer", "minimum": 1, "example": 1},
    },
}


def page_of(queryset, offset: int, limit: int):
    """The rows ``offset`` to ``offset + limit`` of an ordered queryset (still lazy).

    A deep page finds its primary keys first, from the ordering's index alone, then fetches
    just those rows: a plain ``OFFSET`` drags every skipped row along (and the planner may
    choose to sort them all), which made page 2,000 of a 100,000-server account cost 60-90 ms
    of PostgreSQL time instead of a few.
    """
    if offset < DEEP_OFFSET:
        return queryset[offset : offset + limit]
    keys = queryset.values("pk")[offset : offset + limit]
    return queryset.filter(pk__in=keys)


class Pages(Protocol):
    """A list's rows as pages are read from it: a queryset (``QuerysetPages``) or SQL kept per
    shape (``hosting.api.compiled.CompiledPages``). The page rules below apply to both."""

    @property
    def ordering(self) -> tuple: ...

    def count(self) -> int: ...

    def rows(self, offset: int, limit: int, *, before: datetime.datetime | None = None) -> list: ...

    # Optional (CompiledPages): ``rows_and_total(offset, limit, *, total=None)`` answers
    # ``(total, rows)`` in one statement, ``total`` being a view's SQL for it and its values
    # (``maintained_total_sql``) or None for the list's own count.


class QuerysetPages:
    """The pages of an ordered queryset."""

    def __init__(self, queryset):
        if not queryset.ordered:
            raise ImproperlyConfigured("Paginated querysets need a total, stable ordering.")
        self.queryset = queryset

    @property
    def ordering(self) -> tuple:
        return tuple(self.queryset.query.order_by)

    def count(self) -> int:
        return self.queryset.count()

    def rows(self, offset: int, limit: int, *, before: datetime.datetime | None = None) -> list:
        """Rows ``offset`` to ``offset + limit`` (of those created before ``before``)."""
        queryset = self.queryset
        if before is not None:
            queryset = queryset.filter(created_at__lt=before)
        return list(page_of(queryset, offset, limit))


class PageNumberPagination(BasePagination):
    """``?page=`` (from 1) and ``?per_page=`` (default 25, at most 100).

    A page past the end is an empty page with the true total, never a 404. The list is put under
    ``results_key`` (``servers``, ``games``...), which each list view sets.
    """

    results_key = "results"

    @classmethod
    def for_key(cls, results_key: str) -> type["PageNumberPagination"]:
        return type(f"{results_key.title()}Pagination", (cls,), {"results_key": results_key})

    def paginate_queryset(self, queryset, request, view=None) -> list:
        return self.paginate_pages(QuerysetPages(queryset), request, view)

    def paginate_pages(self, pages: Pages, request, view=None) -> list:
        """The page the request asks for, with ``total`` (the same rules for any ``Pages``)."""
        offset = self._read_page(request)
        # A view that keeps counts may find a deep page without skipping every earlier row.
        seek = getattr(view, "seek_deep_page", None)
        if offset >= DEEP_OFFSET and seek is not None:
            found = seek(pages, offset, self.per_page)
            if found is not None:
                self.total, page = found
                return page
        together = getattr(pages, "rows_and_total", None)
        if together is not None:
            # Kept SQL: the total and the page in one statement, one round trip.
            maintained_sql = getattr(view, "maintained_total_sql", None)
            total = maintained_sql() if maintained_sql is not None else None
            self.total, page = together(offset, self.per_page, total=total)
            return page
        maintained = getattr(view, "maintained_total", None)
        self.total = maintained() if maintained is not None else None
        if self.total is None:
            self.total = pages.count()
        if offset >= self.total:
            return []
        return pages.rows(offset, self.per_page)

    def _read_page(self, request) -> int:
        """Read ``page`` and ``per_page``; the offset of the page's first row."""
        self.request = request
        params = request.query_params
        self.page = integer_value(params, "page", default=1, minimum=1, maximum=MAX_PAGE)
        self.per_page = integer_value(
            params, "per_page", default=DEFAULT_PER_PAGE, minimum=1, maximum=MAX_PER_PAGE
        )
        return (self.page - 1) * self.per_page

    def paginate_fetched(self, fetch: Callable[[int, int], tuple[int, list]], request) -> list:
        """A page of a list kept elsewhere (a node's folder): ``fetch(offset, limit)`` answers
        ``(total, rows)``; the same parameters, ``pagination`` and ``Link`` as a queryset's."""
        offset = self._read_page(request)
        self.total, rows = fetch(offset, self.per_page)
        return rows

    @property
    def total_pages(self) -> int:
        return max(1, math.ceil(self.total / self.per_page))

    def _answer(self, data) -> dict:
        pagination = {
            "page": self.page,
            "per_page": self.per_page,
            "total": self.total,
            "total_pages": self.total_pages,
        }
        return {self.results_key: data, "pagination": pagination}

    def get_paginated_response(self, data) -> Response:
        return Response(self._answer(data), headers={"Link": self._link_header()})

    def rendered_response(self, data) -> HttpResponse:
        """The same answer as ``get_paginated_response``, rendered here: no DRF ``Response``
        (a template response, rendered later through several calls) for a list whose rows are
        already plain values (``EnvelopeListMixin.list``)."""
        return HttpResponse(
            envelope(self._answer(data)),
            content_type=EnvelopeJSONRenderer.media_type,
            headers={"Link": self._link_header()},
        )

    def _link_header(self) -> str:
        links = [("first", 1)]
        if self.page > 1:
            links.append(("prev", min(self.page - 1, self.total_pages)))
        if self.page < self.total_pages:
            links.append(("next", self.page + 1))
        links.append(("last", self.total_pages))
        base = _link_base(self.request) + "?"
        # The query is the same in every link but for its page: the parameters sorted by name
        # before and after "page" are encoded once.
        items = sorted((k, v) for k, v in self.request.query_params.lists() if k != "page")
        before = urlencode([(k, v) for k, v in items if k < "page"], doseq=True)
        after = urlencode([(k, v) for k, v in items if k > "page"], doseq=True)
        before, after = before + "&" if before else "", "&" + after if after else ""
        return ", ".join(f'<{base}{before}page={page}{after}>; rel="{rel}"' for rel, page in links)

    def get_paginated_response_schema(self, schema: dict) -> dict:
        return {
            "type": "object",
            "required": [self.results_key, "pagination"],
            "properties": {self.results_key: schema, "pagination": PAGINATION_SCHEMA},
        }

    def get_schema_operation_parameters(self, view) -> list[dict]:
        return [
            {
                "name": "page",
                "in": "query",
                "required": False,
                "description": "Page number, starting at 1. A page past the end is empty.",
                "schema": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 1},
            },
            {
                "name": "per_page",
                "in": "query",
                "required": False,
                "description": f"Items per page, 1 to {MAX_PER_PAGE}.",
                "schema": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_PER_PAGE,
                    "default": DEFAULT_PER_PAGE,
                },
            },
        ]
