"""django-filter glue: bad query values become 400 ``invalid_parameter`` (CONTRACT §4)."""

import datetime

import django_filters
from django import forms
from django.http import QueryDict
from django_filters.fields import IsoDateTimeField
from django_filters.rest_framework import DjangoFilterBackend

from hosting.api.params import list_value, single_value
from hosting.errors import InvalidParameter


def _is_list(filter_: django_filters.Filter) -> bool:
    return isinstance(filter_, django_filters.filters.BaseCSVFilter)


def filter_data(params: QueryDict, filters: dict[str, django_filters.Filter]) -> QueryDict:
    """The query parameters a FilterSet reads, each checked by the shared parsers: lists
    joined from comma lists and repeated keys, everything else given at most once, never empty
    and holding only storable text. Unknown parameters are left out (they are ignored)."""
    data = QueryDict(mutable=True)
    for name, filter_ in filters.items():
        if _is_list(filter_):
            items = list_value(params, name)
            value = None if items is None else ",".join(items)
        else:
            value = single_value(params, name)
        if value is not None:
            data[name] = value
    return data


class QueryParameterFilterBackend(DjangoFilterBackend):
    """Each action of a view has its own FilterSet, or none: ``filterset_classes = {"list":
    ServerFilter}``. A list's filters never narrow a detail lookup (``GET /servers/{id}?status=
    running`` is that server, whatever its status) nor appear in other actions' documentation."""

    def get_filterset_class(self, view, queryset=None):
        return getattr(view, "filterset_classes", {}).get(getattr(view, "action", None))

    def get_filterset_kwargs(self, request, queryset, view):
        filters = self.get_filterset_class(view, queryset).base_filters
        return {
            "data": filter_data(request.query_params, filters),
            "queryset": queryset,
            "request": request,
        }

    def filter_queryset(self, request, queryset, view):
        filterset_class = self.get_filterset_class(view, queryset)
        if filterset_class is None or request.query_params.keys().isdisjoint(
            filterset_class.base_filters
        ):
            # An unfiltered list (the common case) skips building a FilterSet, which deep-copies
            # every filter: a few milliseconds per request for nothing.
            request.list_filters = {}
            return queryset
        filterset = self.get_filterset(request, queryset, view)
        _check(filterset, request)
        return filterset.qs

    def cleaned_filters(self, request, view):
        """``(filterset, values)``: the list's query parameters read and checked by its
        FilterSet, as ``filter_queryset`` reads them (a 400 names a bad one), without filtering
        anything; the values given (None and empty ones left out). ``(None, {})`` when none is
        given."""
        filterset_class = self.get_filterset_class(view)
        if filterset_class is None or request.query_params.keys().isdisjoint(
            filterset_class.base_filters
        ):
            request.list_filters = {}
            return None, {}
        queryset = view.model._default_manager.none()
        filterset = filterset_class(**self.get_filterset_kwargs(request, queryset, view))
        return filterset, _check(filterset, request)


def _check(filterset, request) -> dict:
    """The FilterSet's values given, or 400 ``invalid_parameter`` naming every bad one. What
    the list was filtered by is noted on the request, for views that can count such a list
    without counting its rows (InstanceViewSet.maintained_total)."""
    if not filterset.is_valid():
        parameters = [
            {"name": name, "code": item["code"] or "invalid", "message": item["message"]}
            for name, messages in filterset.errors.get_json_data().items()
            for item in messages
        ]
        names = ", ".join(f"'{item['name']}'" for item in parameters)
        raise InvalidParameter(
            f"Invalid query parameter {names}: {parameters[0]['message']}",
            details={"parameters": parameters},
        )
    request.list_filters = {
        name: value
        for name, value in filterset.form.cleaned_data.items()
        if value not in (None, "", [], ())
    }
    return request.list_filters


class StableOrderingFilter(django_filters.OrderingFilter):
    """``ordering=field`` or ``-field``, always finished with ``-created_at, -id``.

    The tie-breakers make every order total, so pages never skip or repeat rows.
    """

    tie_breakers = ("-created_at", "-id")

    def filter(self, qs, value):
        if not value:
            return qs
        ordering = [self.get_ordering_value(param) for param in value]
        used = {field.lstrip("-") for field in ordering}
        ordering += [field for field in self.tie_breakers if field.lstrip("-") not in used]
        return qs.order_by(*ordering)


class ChoiceInFilter(django_filters.BaseInFilter, django_filters.ChoiceFilter):
    """One value or a comma-separated list, each checked against the choices."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("lookup_expr", "in")
        super().__init__(*args, **kwargs)


class UtcDateTimeField(IsoDateTimeField):
    """An ISO 8601 time, in UTC.

    A time with no UTC equivalent (``0001-01-01T00:00+14:00`` lies before the first moment
    Python can hold, ``9999-12-31T23:59-14:00`` after the last) is valid ISO 8601, so it is
    not refused: it becomes that first or last moment. As a bound of a range nothing can lie
    outside those, so the list it selects is the same.
    """

    def to_python(self, value):
        moment = super().to_python(value)
        if moment is None:
            return None
        try:
            return moment.astimezone(datetime.UTC)
        except OverflowError:
            edge = datetime.datetime.min if moment.year == 1 else datetime.datetime.max
            return edge.replace(tzinfo=datetime.UTC)


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcDateTimeField


class CreatedRangeFilterSet(django_filters.FilterSet):
    """``created_after`` (inclusive) and ``created_before`` (exclusive), for any list."""

    created_after = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="gte", help_text="Created at or after (ISO 8601)."
    )
    created_before = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="lt", help_text="Created before (ISO 8601)."
    )


class _TrueOrFalseField(forms.NullBooleanField):
    """``true`` or ``false`` (any case), as the schema's boolean is written in a query; any
    other value is refused. Django's own widget reads an unknown value as "not given", so
    ``active=AAA`` would list everything."""

    widget = forms.TextInput

    def to_python(self, value):
        if value in (None, ""):
            return None
        words = {"true": True, "false": False}
        if not isinstance(value, str) or value.lower() not in words:
            raise forms.ValidationError("Give true or false.", code="invalid")
        return words[value.lower()]


class BooleanParameterFilter(django_filters.BooleanFilter):
    """A boolean query parameter: ``true`` or ``false``, anything else 400."""

    field_class = _TrueOrFalseField
