"""Search, filters, sorting and pagination for the dashboard's lists, as the API's lists have.

A ``ListView`` takes ``ListControlsMixin`` (before the view classes it builds on) and declares
what its list offers; each app's view names its own fields::

    class ServerListView(ListControlsMixin, AccountPageMixin, ListView):
        search_fields = ("name", "=id")        # ?q=: part of the name, or exactly the id
        filterset_class = ServerListFilter     # a django-filter FilterSet: ?status=running
        sort_fields = {"name": Lower("name"), "created_at": "created_at"}  # ?sort=-name
        default_sort = "-created_at"
        paginate_by = 25

        def get_base_queryset(self):
            return servers_of_account(account_id=self.account.id)

Its template includes ``dashboard/includes/list_controls.html`` (the search box, the filters and
the notices), ``dashboard/includes/sort_header.html`` for each sortable column header, and
``dashboard/includes/pagination.html``; all of them read the context's ``listing``.

Whatever the query string holds, the page answers 200 (NUL characters never reach a view: see
``hosting.middleware``). A page that is not a whole number shows page 1, and one that does not
exist (past the end, or below 1) the last page, as Django's ``Paginator.get_page`` chooses; an
unknown sort key sorts by ``default_sort``; an invalid filter value is left out while the valid
ones still apply. Each correction is said in a notice above
the list rather than by a redirect, so a live partial (``?partial=live``) that asks with the
same query string gets the same rows. The page's own links (pages, sort headers, "Clear") carry
only the parameters that were applied, so a notice does not follow the reader from page to page.
Notices are not ``django.contrib.messages``: a partial that never shows them would otherwise
leave them for the next full page.
"""

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce

import django_filters
from django import forms
from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured
from django.core.paginator import EmptyPage, PageNotAnInteger, Paginator
from django.db.models import F, Q, QuerySet
from django.db.models.expressions import Combinable
from django.http import QueryDict
from django.utils.text import Truncator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

SEARCH_PARAM = "q"
SORT_PARAM = "sort"
# Longer searches are cut: nothing searched is longer (an e-mail address: 254 at most), and every
# row is matched against the text.
MAX_SEARCH_LENGTH = 254
RESERVED_PARAMS = frozenset({SEARCH_PARAM, SORT_PARAM, "page", "partial"})


@dataclass(frozen=True)
class SortColumn:
    """A sortable column's header: the address that sorts by it, and how it is sorted now."""

    url: str
    direction: str  # "ascending" or "descending" when the list is sorted by it, else ""


@dataclass(frozen=True)
class Listing:
    """What the list's templates show besides the rows: the context's ``listing``."""

    search: str
    search_label: str
    search_max_length: int
    searchable: bool
    filter_form: forms.Form | None
    sort: str
    sort_is_default: bool
    columns: dict[str, SortColumn]
    notices: list[str]
    is_filtered: bool
    clear_url: str
    previous_url: str | None
    next_url: str | None


def search_lookup(field: str) -> str:
    """``"=id"`` matches only the whole value, exactly; ``"name"`` any part of it, ignoring case."""
    return field[1:] if field.startswith("=") else f"{field}__icontains"


class ListControlsMixin:
    """A ``ListView`` with ``?q=``, a FilterSet's filters, ``?sort=`` and a forgiving ``?page=``.

    ``search_fields``: what ``?q=`` matches, any of them (the row's own columns or forward
    relations, so that no row is repeated). ``filterset_class``: a django-filter ``FilterSet``
    whose filters are the list's filter menus. ``sort_fields``: the allowed ``?sort=`` keys,
    each a field name or an expression; ``-key`` sorts descending, and the primary key in the
    same direction ends every order, so pages never skip or repeat rows. ``default_sort``: the
    order without ``?sort=``, one of those keys. ``get_base_queryset()``: the rows the list may
    show at all, already limited to what the reader may see.
    """

    search_fields: Sequence[str] = ()
    search_label = gettext_lazy("Search")
    filterset_class: type[django_filters.FilterSet] | None = None
    sort_fields: Mapping[str, str | Combinable] = {}
    default_sort = ""
    paginate_by = 25

    def get_base_queryset(self) -> QuerySet:
        return super().get_queryset()

    def get_queryset(self) -> QuerySet:
        # What was applied, in the order the page's links repeat it.
        self.list_params = QueryDict(mutable=True)
        self.list_notices: list[str] = []
        queryset = self.search_queryset(self.get_base_queryset())
        queryset = self.filter_queryset(queryset)
        return self.sort_queryset(queryset)

    # --- Search, filters, sorting --------------------------------------------------------------

    def search_queryset(self, queryset: QuerySet) -> QuerySet:
        text = " ".join(self.request.GET.get(SEARCH_PARAM, "").split())
        if not self.search_fields or not text:
            self.search_text = ""
            return queryset
        if len(text) > MAX_SEARCH_LENGTH:
            text = text[:MAX_SEARCH_LENGTH]
            self.list_notices.append(
                _("The search was cut to its first %(length)s characters.")
                % {"length": MAX_SEARCH_LENGTH}
            )
        self.search_text = self.list_params[SEARCH_PARAM] = text
        matches = (Q(**{search_lookup(field): text}) for field in self.search_fields)
        return queryset.filter(reduce(operator.or_, matches))

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        self.filter_form = None
        if self.filterset_class is None:
            return queryset
        names = self.filterset_class.base_filters.keys()
        if clash := RESERVED_PARAMS & names:
            raise ImproperlyConfigured(f"{self.filterset_class.__name__} uses {sorted(clash)}.")
        data = QueryDict(mutable=True)
        for name in names:
            if value := self.request.GET.get(name, "").strip():
                data[name] = value
        filterset = self.filterset_class(data=data, queryset=queryset, request=self.request)
        self.filter_form = filterset.form
        if not filterset.is_valid():
            for name, errors in filterset.errors.items():
                field = filterset.form.fields.get(name)
                label = (field.label if field else None) or name
                self.list_notices.append(
                    _("The %(filter)s filter was left out: %(error)s")
                    % {"filter": str(label).lower(), "error": errors[0]}
                )
                data.pop(name, None)
            # The menus show what was applied, not the value that was left out.
            self.filter_form = filterset.get_form_class()(data, prefix=filterset.form_prefix)
        self.list_params.update(data)
        return filterset.qs

    def sort_queryset(self, queryset: QuerySet) -> QuerySet:
        if self.default_sort.removeprefix("-") not in self.sort_fields:
            raise ImproperlyConfigured(f"{type(self).__name__}.default_sort is not a sort key.")
        requested = self.request.GET.get(SORT_PARAM, "").strip()
        self.sort = self.default_sort
        if requested.removeprefix("-") in self.sort_fields:
            self.sort = requested
        elif requested:
            shown = Truncator(requested).chars(40)
            self.list_notices.append(
                _("This list cannot be sorted by “%(sort)s”: it is in its usual order.")
                % {"sort": shown}
            )
        if self.sort != self.default_sort:
            self.list_params[SORT_PARAM] = self.sort
        field = self.sort_fields[self.sort.removeprefix("-")]
        key, tie_breaker = (F(field) if isinstance(field, str) else field), F("pk")
        # Empty values last both ways, but only where there can be any: NULLS LAST on a column
        # that is never null would keep PostgreSQL from reading an index in its order.
        nulls_last = (
            True if not isinstance(field, str) or _nullable(queryset.model, field) else None
        )
        if self.sort.startswith("-"):
            return queryset.order_by(key.desc(nulls_last=nulls_last), tie_breaker.desc())
        return queryset.order_by(key.asc(nulls_last=nulls_last), tie_breaker.asc())

    # --- Pages -----------------------------------------------------------------------------

    def paginate_queryset(self, queryset: QuerySet, page_size: int):
        """Django's, except that a page that does not exist is never a 404 (module docstring)."""
        paginator = self.get_paginator(
            queryset,
            page_size,
            orphans=self.get_paginate_orphans(),
            allow_empty_first_page=self.get_allow_empty(),
        )
        page = paginator.page(self.page_number(paginator))
        return paginator, page, page.object_list, page.has_other_pages()

    def page_number(self, paginator: Paginator) -> int:
        """``Paginator.get_page``'s choice, said in a notice: a page that is not a whole number
        is page 1, any other page that does not exist (0 and below too) is the last page."""
        raw = self.kwargs.get(self.page_kwarg) or self.request.GET.get(self.page_kwarg) or "1"
        if raw == "last":
            return paginator.num_pages
        shown = Truncator(raw).chars(20)
        try:
            return paginator.validate_number(raw)
        except PageNotAnInteger:
            self.list_notices.append(
                _("“%(page)s” is not a page number: this is page 1.") % {"page": shown}
            )
            return 1
        except EmptyPage:
            self.list_notices.append(
                _("There is no page %(page)s: this is the last page.") % {"page": shown}
            )
            return paginator.num_pages

    # --- What the templates get ---------------------------------------------------------------

    def list_url(self, **changes: str | None) -> str:
        """This list's address with the applied parameters, changed (``None`` removes one)."""
        params = self.list_params.copy()
        for name, value in changes.items():
            params.pop(name, None)
            if value is not None:
                params[name] = value
        return f"?{params.urlencode()}" if params else self.request.path

    def page_url(self, number: int) -> str:
        return self.list_url(page=str(number) if number > 1 else None)

    def sort_column(self, key: str) -> SortColumn:
        direction = ""
        target = key
        if self.sort.removeprefix("-") == key:
            descending = self.sort.startswith("-")
            direction = "descending" if descending else "ascending"
            target = key if descending else f"-{key}"
        sort = None if target == self.default_sort else target
        return SortColumn(url=self.list_url(sort=sort, page=None), direction=direction)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        page = context.get("page_obj")
        filters = self.filter_form.fields if self.filter_form is not None else {}
        narrowing = [SEARCH_PARAM, *filters]
        context["listing"] = Listing(
            search=self.search_text,
            search_label=self.search_label,
            search_max_length=MAX_SEARCH_LENGTH,
            searchable=bool(self.search_fields),
            filter_form=self.filter_form,
            sort=self.sort,
            sort_is_default=self.sort == self.default_sort,
            columns={key: self.sort_column(key) for key in self.sort_fields},
            notices=self.list_notices,
            is_filtered=any(name in self.list_params for name in narrowing),
            clear_url=self.list_url(**dict.fromkeys(narrowing), page=None),
            previous_url=self.page_url(page.previous_page_number())
            if page and page.has_previous()
            else None,
            next_url=self.page_url(page.next_page_number()) if page and page.has_next() else None,
        )
        return context


def _nullable(model, path: str) -> bool:
    """Whether the column a lookup path (``user__email``) names may be null on the way there."""
    try:
        for part in path.split("__"):
            field = model._meta.get_field(part)
            if field.null:
                return True
            model = field.related_model or model
    except FieldDoesNotExist:
        return True  # an annotation: whatever it holds
    return False
