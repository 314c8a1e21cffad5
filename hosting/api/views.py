"""Shared view building blocks: envelope-shaped list and detail, the JSON 404."""

from collections.abc import Callable

from django.db.models import QuerySet
from django.utils.encoding import escape_uri_path
from django.views.decorators.csrf import csrf_exempt
from rest_framework import viewsets
from rest_framework.response import Response

from hosting import errors
from hosting.api.compiled import list_pages
from hosting.api.exceptions import error_response
from hosting.api.pagination import PageNumberPagination
from hosting.api.serializers import shown_as_rows
from hosting.queries import NotCompilable

# OPTIONS is not offered (README, "API decisions"), so no answer's ``Allow`` names it.
API_METHODS = ["get", "post", "put", "patch", "delete", "head"]


class ApiViewSet(viewsets.GenericViewSet):
    """The base of every API view set."""

    http_method_names = API_METHODS


class CallerScopedMixin:
    """Limit a view to what the calling key may see, through ``caller_queryset(principal)``.

    The selector gets the whole principal (key, user, account, role): most views only need the
    account, but some (API keys) also depend on who is asking.
    """

    model: type

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no key
            return self.model.objects.none()
        return self.caller_queryset(self.request.auth)


class EnvelopeListMixin:
    """``GET`` a collection as ``data.<list_key>`` plus ``data.pagination``.

    ``speculative_list``: the list is answered while the caller's key is still being looked
    up (``dispatch``).
    """

    list_key: str
    speculative_list = False

    def dispatch(self, request, *args, **kwargs):
        """A hot list (``speculative_list``) does not wait for its key's lookup before its
        statement: an authentication class that can (``speculate(request)``, the API keys')
        sends the lookup and names the principal it most likely answers; the list is answered
        for that principal, then the lookup's answer is read (``settle()``). The two waits,
        Redis's and the database's, overlap. An answer that does not confirm the principal
        (the key revoked, its role changed, over its limit...) is thrown away, the view and
        the request are put back as they were before it (nothing it worked out, a caller or
        grants, is used again), and the request is answered again the ordinary way with the
        lookup's answer (``retry(request)``). A list's ``GET`` changes nothing, so answering it
        twice costs only its statement."""
        speculation = self._speculation(request) if self._may_speculate(request) else None
        if speculation is None:
            return super().dispatch(request, *args, **kwargs)
        view_state, request_state = dict(self.__dict__), dict(request.__dict__)
        try:
            response = super().dispatch(request, *args, **kwargs)
        except Exception:
            if speculation.settle():
                raise
        except BaseException:  # a worker stopped mid-request, say: nothing is answered
            speculation.abandon()
            raise
        else:
            if speculation.settle():
                return response
        self.__dict__.clear()
        self.__dict__.update(view_state)
        request.__dict__.clear()
        request.__dict__.update(request_state)
        speculation.retry(request)
        return super().dispatch(request, *args, **kwargs)

    def _may_speculate(self, request) -> bool:
        return (
            self.speculative_list
            and request.method == "GET"
            and self.action_map.get("get") == "list"
        )

    def _speculation(self, request):
        for authentication in self.authentication_classes:
            speculate = getattr(authentication, "speculate", None)
            if speculate is not None:
                return speculate(request)
        return None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "list_key" in cls.__dict__:
            cls.pagination_class = PageNumberPagination.for_key(cls.list_key)

    def list(self, request, *args, **kwargs):
        page = None
        pages = self.compiled_pages(request)
        if pages is not None:
            try:
                page = self.paginator.paginate_pages(pages, request, self)
            except NotCompilable:
                page = None  # built with the ORM below, as any list
        if page is None:
            page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        data = shown_as_rows(self.get_serializer_class(), page)
        if data is None:
            data = self.get_serializer(page, many=True).data
        return self.paginator.rendered_response(self.rows_shown(data, page))

    def compiled_pages(self, request):
        """The list's pages from SQL built once per shape (hosting/api/compiled.py), for a view
        whose ``list_query()`` says how its list is built with placeholders: ``(base, values,
        shape)``, ``base(param)`` its queryset before the filters with each value taken from
        ``param(name)``, ``values`` this request's values by name, ``shape`` what else changes
        the SQL. None (no ``list_query``, or it answers None): the ORM builds the list."""
        list_query = getattr(self, "list_query", None)
        if list_query is None or getattr(self, "swagger_fake_view", False):
            return None
        found = list_query()
        if found is None:
            return None
        base, values, shape = found
        return list_pages(self, request, base=base, values=values, shape=shape)

    def rows_shown(self, rows, page):
        """The page's rows as the caller may see them (``page``: their objects); all of them."""
        return rows


class AccountListMixin:
    """A list of the caller's account's rows, by ``account_rows(account_id=...)`` (a selector),
    compiled once per shape (``EnvelopeListMixin.compiled_pages``): the account is its only
    value besides the filters'."""

    account_rows: Callable[..., QuerySet]

    def caller_queryset(self, principal):
        return type(self).account_rows(account_id=principal.account.id)

    def list_query(self):
        def base(param):
            return type(self).account_rows(account_id=param("account_id"))

        return base, {"account_id": self.request.auth.account.id}, ()


def paginated(view, queryset, key: str, serializer_class) -> Response:
    """A second paginated list on a view (``/servers/{id}/actions``) under ``data.<key>``."""
    paginator = PageNumberPagination.for_key(key)()
    page = paginator.paginate_queryset(queryset, view.request, view)
    return paginator.get_paginated_response(serializer_class(page, many=True).data)


class EnvelopeRetrieveMixin:
    """``GET`` one resource as ``data.<resource_key>``."""

    resource_key: str

    def retrieve(self, request, *args, **kwargs):
        return Response({self.resource_key: self.get_serializer(self.get_object()).data})


def validated(serializer_class, request) -> dict:
    """The request body as ``serializer_class`` reads it; a 400 ``validation_failed`` if not."""
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def deleted(object_id: str) -> Response:
    """The answer to a ``DELETE`` that removed the object at once (``DeletedSerializer``)."""
    return Response({"id": object_id, "deleted": True})


def created(request, data: dict, location: str) -> Response:
    """201 with the new resource and ``Location``, the address it can be read at (``/v1/...``)."""
    return Response(data, status=201, headers={"Location": request.build_absolute_uri(location)})


@csrf_exempt  # any method: a POST to a path that does not exist is a 404, not a CSRF failure
def api_not_found(request, *args, **kwargs):
    """Catch-all for ``/v1/...`` paths that match no endpoint."""
    path = escape_uri_path(request.path)  # as sent on the wire: control characters stay escaped
    return error_response(errors.NotFound(f"No API endpoint at {path}."), request)
