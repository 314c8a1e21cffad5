"""A list's pages from SQL the ORM builds once per shape (hosting/queries.py, issue 35).

A view says how its list is built with placeholders (``list_query``, hosting/api/views.py);
``list_pages`` reads and checks the request's filters with the view's FilterSet, keys the
shape and gives ``CompiledPages``, which hosting/api/pagination.py pages as it pages a
queryset.
"""

import datetime
from collections.abc import Callable

import django_filters
from django.db import connections, router
from django.db.models.query import QuerySet

from hosting.queries import (
    CACHE_LIMIT,
    CompiledQuery,
    NotCompilable,
    Param,
    compile_queryset,
    compiled,
    page_values,
    paged,
    params_of,
    shape_of,
    slot,
    values_of,
    with_total,
)

# --- A list's pages ------------------------------------------------------------------------

_orderings: dict[tuple, tuple] = {}


class CompiledPages:
    """A list's pages (hosting.api.pagination's ``Pages``) from SQL kept per shape.

    ``build(param)`` makes the list's ``values()`` queryset, filtered and ordered, taking each
    value from ``param(name)``; it runs once per shape. ``values`` are this request's values
    by name. ``records``: a model list's rows are given as ``Record``s (hosting/queries.py).
    """

    def __init__(
        self,
        key: tuple,
        build: Callable[[], QuerySet],
        values: dict,
        using: str,
        *,
        records: bool = False,
    ):
        self.key, self.build, self.values, self.using = key, build, values, using
        self.records = records

    @property
    def ordering(self) -> tuple:
        if self.key not in _orderings:
            if len(_orderings) >= CACHE_LIMIT:  # bounded as the kept queries are
                _orderings.clear()
            _orderings[self.key] = tuple(self.build().query.order_by)
        return _orderings[self.key]

    def _run(self, style: tuple, make: Callable[[], CompiledQuery], values: dict) -> list[dict]:
        query = compiled((*self.key, *style), make)
        if query is None:
            raise NotCompilable(f"{self.key} {style}")
        return query.rows(values, using=self.using)

    def _count_query(self) -> CompiledQuery:
        inner = compile_queryset(self.build().order_by().values("pk"), paged=False)
        return CompiledQuery(
            sql=f"SELECT COUNT(*) AS n FROM ({inner.sql}) counted",  # noqa: S608
            params=inner.params,
            names=("n",),
            converters=(),
        )

    def count(self) -> int:
        return self._run(("count",), self._count_query, self.values)[0]["n"]

    def _page_query(
        self, deep: bool, before: bool, total: CompiledQuery | None = None
    ) -> CompiledQuery:
        queryset = self.build()
        if before:
            queryset = queryset.filter(created_at__lt=Param("before"))
        # A deep page: keys first, as hosting.api.pagination.page_of.
        queryset = queryset.filter(pk__in=paged(queryset.values("pk"))) if deep else paged(queryset)
        if total is not None:
            queryset = with_total(queryset, total)
        return compile_queryset(queryset, paged=True, records=self.records)

    def _page_values(self, offset: int, limit: int, before: datetime.datetime | None) -> dict:
        values = {**self.values, **page_values(offset, limit)}
        if before is not None:
            values["before"] = before
        return values

    def rows(self, offset: int, limit: int, *, before: datetime.datetime | None = None) -> list:
        from hosting.api.pagination import DEEP_OFFSET

        deep = offset >= DEEP_OFFSET
        return self._run(
            ("rows", deep, before is not None),
            lambda: self._page_query(deep, before is not None),
            self._page_values(offset, limit, before),
        )

    def rows_and_total(
        self, offset: int, limit: int, *, total: tuple[str, list] | None = None
    ) -> tuple[int, list]:
        """``(total, rows)`` of a page, the total selected beside each row (one statement): the
        list's own count, or ``total`` (a view's SQL for it and its values, hosting.api.
        pagination's ``maintained_total_sql``). A page with no row (past the end, or an empty
        list) reads the total on its own."""
        from hosting.api.pagination import DEEP_OFFSET

        deep = offset >= DEEP_OFFSET
        values = self._page_values(offset, limit, None)
        if total is None:
            style: tuple = ("rows+count", deep)
            counted = self._count_query
        else:
            sql, given = total
            style = ("rows+total", deep, sql, len(given))
            values.update({f"total.{n}": value for n, value in enumerate(given)})

            def counted() -> CompiledQuery:
                slots = tuple(slot(f"total.{n}") for n in range(len(given)))
                return CompiledQuery(sql=sql, params=slots, names=("n",))

        query = compiled((*self.key, *style), lambda: self._page_query(deep, False, counted()))
        if query is None:
            raise NotCompilable(f"{self.key} {style}")
        found, rows = query.rows_and_total(values, using=self.using)
        if found is None:
            found = self._run((*style, "alone"), counted, values)[0]["n"]
        return found, rows


# Filters whose SQL is the same whatever their value: django-filter's own lookups of a field.
_STOCK_FILTERING = (django_filters.Filter.filter, django_filters.ChoiceFilter.filter)


def _bindable(filter_) -> bool:
    """Whether ``filter_`` takes a placeholder for its value: a plain lookup, not a method of
    its own or a ``filter()`` that reads the value (a search, an event type's wildcards)."""
    return (
        not getattr(filter_, "method", None)
        and type(filter_).filter in _STOCK_FILTERING
        # A choice filter's "null" choice is an isnull lookup, not a value.
        and getattr(filter_, "null_label", None) is None
    )


def list_pages(
    view, request, *, base: Callable, values: dict, shape: tuple
) -> CompiledPages | None:
    """The compiled pages of ``view``'s list for this request, or None to build it with the ORM.

    ``base(param)`` is the view's ``values()`` queryset before the filters, taking its values
    from ``param(name)``; ``values`` are this request's (by the same names); ``shape`` is what
    else changes its SQL (a caller's role, say). A view whose ``list_records`` is true gets a
    model list's rows as ``Record``s (its answer reads their fields and kept children only).
    The query parameters are read and checked by the view's FilterSet as for any list (a 400
    names a bad one); a filter with a method of its own or a ``filter()`` that reads the value
    (a search, an event type's wildcards: their SQL depends on the value) is built with the
    ORM each time.
    """
    from hosting.api.filters import QueryParameterFilterBackend

    filterset, cleaned = QueryParameterFilterBackend().cleaned_filters(request, view)
    filters = {name: filterset.filters[name] for name in cleaned} if cleaned else {}
    # An ordering's value is part of the shape (one of a whitelist); other values are bound.
    ordered = {name for name, f in filters.items() if isinstance(f, django_filters.OrderingFilter)}
    if any(not _bindable(f) for name, f in filters.items() if name not in ordered):
        return None
    filter_shape = tuple(
        sorted(
            (name, tuple(value) if name in ordered else shape_of(value))
            for name, value in cleaned.items()
        )
    )
    using = router.db_for_read(view.model)
    key = (type(view), view.action, using, connections[using].vendor, shape, filter_shape)

    def build() -> QuerySet:
        queryset = base(Param)
        for name, value in cleaned.items():
            given = value if name in ordered else params_of(f"filter.{name}", value)
            queryset = filters[name].filter(queryset, given)
        return queryset

    request_values = dict(values)
    for name, value in cleaned.items():
        if name not in ordered:
            request_values.update(values_of(f"filter.{name}", value))
    records = getattr(view, "list_records", False)
    return CompiledPages(key, build, request_values, using, records=records)
