"""Queries built by the ORM once per shape, then run with new parameters (issue 35).

Building a queryset and compiling it to SQL costs more than running the query it makes (about
240 µs of a hot list's request, bench/README.md). A list's SQL depends only on its *shape*:
which filters are given (and how many values a list filter has), the ordering, the page style
(a plain page, a deep page fetched keys first, a page among rows created before a moment); its
values (the account, the statuses, the page's offset) are parameters. So a list builds its
queryset with ``Param`` placeholders in place of the values, the ORM compiles it once, and
later requests of the same shape bind their values to the kept SQL. The API's lists use it
through hosting/api/compiled.py; the API key lookup (accounts/selectors.py) likewise.

- ``Param(name)`` is an expression the ORM takes wherever a value goes (``filter(account_id=
  Param("account_id"))``, a list of them for ``__in``) and compiles to one placeholder.
- The page's ``LIMIT``/``OFFSET``, which Django writes into the SQL as numbers, are compiled from
  two sentinel numbers and turned into placeholders (each must appear exactly once, or the
  shape is not compiled).
- ``compiled(key, build)`` keeps the result per key (its callers put the database alias and
  vendor in it): the SQL, the parameters (placeholders and the ORM's own constants), the
  column names and the database converters of each column (SQLite's text datetimes read back
  as ``datetime``), and for a list of model instances how the ORM's own iteration builds
  them (their fields' columns, ``select_related`` rows, annotations, prefetches).
- ``with_total`` selects a total (a count, kept SQL too) beside each row of a page as a scalar
  subquery, so a page and its total cost one statement and the rows keep the page's order.
- A list of model instances that prefetches a plain reverse foreign key (an invoice's
  ``lines``) reads the children from kept SQL too (one query per number of parents, as the
  ORM's prefetch reads them: the children's default manager, ``<fk>__in`` the parents) and
  hands each parent its children exactly where the ORM's prefetch puts them (the related
  manager's queryset, its rows known; each child's parent cached). Other prefetches (nested,
  ``Prefetch`` objects, many-to-many) run through the ORM's ``prefetch_related_objects``.
- A model list compiled as *records* (``compile_queryset(..., records=True)``) gives each row
  as a ``Record``, a plain object holding the model's field values under their attribute
  names (``subscription_id``), ``pk``, the annotations and each kept prefetch's children as
  ``Children`` (``all()``, ``count()``, iteration): what a representation function reads of
  a model instance, without building the instance and a related manager per row (about a
  quarter of the invoices list's CPU, bench/README.md). For lists whose answer is read only
  that way (a view's ``list_records``); a query with ``select_related`` or another prefetch
  gives model instances as before.

Values are adapted as the ORM adapts them for a lookup: datetimes and dates through the
backend's operations, a model instance as its primary key.
"""

import datetime
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from weakref import ref as weak_ref

from django.db import connections, models
from django.db.models import F, prefetch_related_objects
from django.db.models.expressions import Expression, RawSQL
from django.db.models.fields.reverse_related import ManyToOneRel
from django.db.models.lookups import In
from django.db.models.query import QuerySet, get_related_populators

from hosting.fields import NOT_READ, json_read

# Offsets and limits no real page has; Django writes them into the SQL as numbers.
OFFSET_SENTINEL = 3_141_592_653
LIMIT_SENTINEL = 2_718_281_828
PAGE_OFFSET, PAGE_LIMIT = "page_offset", "page_limit"


class NotCompilable(Exception):
    """This shape's SQL cannot be kept: the caller builds it with the ORM each time."""


class Record:
    """A model's row as plain attributes (``compile_queryset(..., records=True)``): its fields'
    values by attribute name, ``pk``, its annotations and its kept children (``Children``).
    Not a model instance: it has no methods, descriptors or related managers."""

    def __repr__(self) -> str:
        return f"<Record {self.__dict__.get('pk')!r}>"


def model_instance(model: type[models.Model], row: Any, *, using: str) -> Any:
    """The model instance a ``Record`` of ``model`` stands for, built from its fields' values
    (no query), for a reader that needs the model's methods or properties (a permission check
    reading ``kind``); anything else (an instance already, a plain row) as it is."""
    if type(row) is not Record:
        return row
    names = [field.attname for field in model._meta.concrete_fields]
    return model.from_db(using, names, [row.__dict__[name] for name in names])


class Children:
    """A record's children by a reverse foreign key, known: what the related manager's
    ``all()`` and ``count()`` answer after a prefetch, without a query."""

    __slots__ = ("_rows",)

    def __init__(self, rows: list) -> None:
        self._rows = rows

    def all(self) -> list:
        return self._rows

    def count(self) -> int:
        return len(self._rows)

    def __iter__(self):
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


def _record(values: dict) -> Record:
    record = Record.__new__(Record)
    record.__dict__ = values
    return record


@dataclass(frozen=True)
class _Slot:
    name: str


class Param(Expression):
    """A value given when the compiled query runs; compiles to one placeholder."""

    def __init__(self, name: str):
        super().__init__(output_field=models.Field())
        self.name = name

    def __repr__(self) -> str:
        return f"Param({self.name!r})"

    @property
    def identity(self):
        return (type(self), self.name)

    def as_sql(self, compiler, connection):
        return "%s", [_Slot(self.name)]


def slot(name: str) -> Any:
    """The placeholder of value ``name`` among a ``CompiledQuery``'s parameters (for SQL written
    by hand, such as a view's ``maintained_total_sql``)."""
    return _Slot(name)


def params_of(prefix: str, value: Any) -> Any:
    """``Param`` placeholders shaped as ``value``: one per item of a list or tuple."""
    if isinstance(value, list | tuple):
        return [Param(f"{prefix}.{n}") for n in range(len(value))]
    return Param(prefix)


def values_of(prefix: str, value: Any) -> dict[str, Any]:
    """The values ``params_of(prefix, value)`` stands for, by name."""
    if isinstance(value, list | tuple):
        return {f"{prefix}.{n}": item for n, item in enumerate(value)}
    return {prefix: value}


def shape_of(value: Any) -> Any:
    """What of a value changes its SQL: how many items a list has; nothing else."""
    return ("list", len(value)) if isinstance(value, list | tuple) else "value"


@dataclass(frozen=True)
class CompiledQuery:
    sql: str
    params: tuple  # _Slot placeholders and the ORM's constants, in order
    names: tuple[str, ...]  # values(): the columns as values() names them
    converters: tuple[tuple[int, tuple, Any], ...] = ()  # (column, converters, expression)
    # A model list instead: its model, the columns of its fields and their attribute names,
    # its annotations' columns, the lookups to prefetch (as the ORM's own iteration does).
    model: type[models.Model] | None = None
    fields: tuple[int, int] = (0, 0)
    attnames: tuple[str, ...] = ()
    annotations: tuple[tuple[str, int], ...] = ()
    prefetch: tuple = ()  # through the ORM's prefetch_related_objects
    children: tuple[ManyToOneRel, ...] = ()  # reverse foreign keys read from kept SQL
    related: tuple = ()  # select_related: the ORM's own populators (column positions only)
    fetch_mode: Any = None  # the queryset's (Django's fetch modes)
    total_at: int = -1  # the column of a total selected beside each row (with_total), if any
    records: bool = False  # a model list given as ``Record``s, not model instances

    def rows(self, values: Mapping[str, Any], *, using: str) -> list:
        """Run with ``values`` (by ``Param`` name); the rows as ``values()`` gives them, or
        the model instances as the queryset would."""
        return self.built(self.fetched(values, using), using)

    def rows_and_total(self, values: Mapping[str, Any], *, using: str) -> tuple[int | None, list]:
        """Run a query that selects a total beside each row (``TOTAL``, ``with_total``):
        ``(total, rows)``, the total None when there is no row to read it from."""
        fetched = self.fetched(values, using)
        total = int(fetched[0][self.total_at]) if fetched else None
        return total, self.built(fetched, using)

    def fetched(self, values: Mapping[str, Any], using: str) -> list:
        """Run with ``values``: the rows as the database gives them (no converter applied);
        ``built(rows)`` makes them what ``rows()`` answers."""
        connection = connections[using]
        params = [
            _adapt(values[p.name], connection) if type(p) is _Slot else p for p in self.params
        ]
        cursor = kept_cursor(connection)
        if cursor is None:  # the statements are logged (DEBUG, a test's capture): as any query
            with connection.cursor() as cursor:
                cursor.execute(self.sql, params)
                return cursor.fetchall()
        cursor.execute(self.sql, params)
        return cursor.fetchall()

    def built(self, rows: list, using: str) -> list:
        """``fetched`` rows as ``rows()`` answers them."""
        connection = connections[using]
        if self.converters:
            rows = [self._convert(row, connection) for row in rows]
        if self.model is None:
            names, at = self.names, self.total_at
            if at >= 0:  # the total is not one of the row's values
                rows = [row[:at] + row[at + 1 :] for row in rows]
            return [dict(zip(names, row, strict=True)) for row in rows]
        if self.records:
            return self._records(rows, using)
        start, end = self.fields
        instances = []
        peers: list = []
        track_peers = self.fetch_mode.track_peers
        for row in rows:
            instance = self.model.from_db(
                using, self.attnames, row[start:end], fetch_mode=self.fetch_mode
            )
            if track_peers:
                peers.append(weak_ref(instance))
                instance._state.peers = peers
            for populator in self.related:
                populator.populate(row, instance)
            for name, index in self.annotations:
                setattr(instance, name, row[index])
            instances.append(instance)
        if instances:
            for relation in self.children:
                _prefetch_children(instances, relation, using)
            if self.prefetch:
                prefetch_related_objects(instances, *self.prefetch)
        return instances

    def _records(self, rows: list, using: str) -> list:
        start, end = self.fields
        names, annotations = self.attnames, self.annotations
        pk = names.index(self.model._meta.pk.attname) + start
        records = []
        for row in rows:
            values = dict(zip(names, row[start:end], strict=True))
            values["pk"] = row[pk]
            for name, index in annotations:
                values[name] = row[index]
            records.append(_record(values))
        if records:
            for relation in self.children:
                _children_of_records(records, relation, using)
        return records

    def _convert(self, row, connection) -> list:
        row = list(row)
        for index, functions, expression in self.converters:
            value = row[index]
            for function in functions:
                value = function(value, expression, connection)
            row[index] = value
        return row


def kept_cursor(connection) -> Any:
    """A cursor of ``connection`` (a Django database wrapper) kept for the kept statements, or
    None when the connection logs its statements (``DEBUG``, ``CaptureQueriesContext``): then
    the caller opens a cursor as any query does, so the log sees it.

    Django makes a cursor wrapper and the driver a cursor (with its own copy of the adapters)
    for every statement, about 4 % of a hot list's time (bench/README.md, "Twelfth run"). The
    kept one is Django's own wrapper, made as ``connection.cursor()`` makes it, so each
    statement still passes the connection's execute wrappers, its broken-transaction check and
    its error translation; it is made again when the connection was opened again (a health
    check that failed, a connection closed at a request's end). A connection belongs to one
    thread, and so does its kept cursor."""
    connection.close_if_health_check_failed()
    connection.ensure_connection()  # as Django's cursor(): opened (again) here when it must be
    if connection.queries_logged:
        return None
    connection.validate_thread_sharing()
    kept = connection.__dict__.get("_kept_cursor")
    if kept is None or getattr(kept.cursor, "connection", None) is not connection.connection:
        with connection.wrap_database_errors:
            kept = connection._prepare_cursor(connection.create_cursor())
        connection._kept_cursor = kept
    return kept


def _kept_converter(function: Callable) -> Callable:
    """A column's converter as kept: a plain ``JSONField``'s reads with orjson where it reads
    as Python's ``json`` (``hosting.fields.json_read``: the same values, a fraction of the
    cost), else as Django does; others as the ORM gives them."""
    if getattr(function, "__func__", None) is models.JSONField.from_db_value and (
        function.__self__.decoder is None
    ):

        def json_column(value: Any, expression: Any, connection: Any) -> Any:
            data = json_read(value)
            return function(value, expression, connection) if data is NOT_READ else data

        return json_column
    return function


def _adapt(value: Any, connection) -> Any:
    if isinstance(value, datetime.datetime):
        return connection.ops.adapt_datetimefield_value(value)
    if isinstance(value, datetime.date):
        return connection.ops.adapt_datefield_value(value)
    if isinstance(value, models.Model):
        value = value.pk
    if isinstance(value, uuid.UUID) and not connection.features.has_native_uuid_field:
        return value.hex
    return value


# The name of a total selected beside each row of a page (``with_total``).
TOTAL = "hms_total"


def with_total(queryset: QuerySet, total: "CompiledQuery") -> QuerySet:
    """``queryset`` with ``total``'s one value selected beside each row, as a scalar subquery
    (so a page and its total are read in one statement, the rows in the page's own order);
    ``total``'s placeholders stay placeholders."""
    return queryset.annotate(
        # Kept SQL the ORM or a view wrote, its values placeholders: nothing of a request's.
        **{TOTAL: RawSQL(total.sql, total.params, output_field=models.IntegerField())}  # noqa: S611
    )


def _children_relation(model: type[models.Model], lookup: Any) -> ManyToOneRel | None:
    """The reverse foreign key a prefetch ``lookup`` names, when its children can be read from
    kept SQL: a plain accessor name (no ``Prefetch``, no ``__`` path) of a one-to-many
    relation."""
    if type(lookup) is not str or "__" in lookup:
        return None
    relation = next(
        (
            field
            for field in model._meta.related_objects
            if type(field) is ManyToOneRel and field.get_accessor_name() == lookup
        ),
        None,
    )
    if relation is None or relation.field.target_field != model._meta.pk:
        return None  # a foreign key to another column than the primary key
    return relation


def _children_rows(
    parents: list, relation: ManyToOneRel, using: str, *, records: bool
) -> dict[Any, list] | None:
    """``parents``' children by ``relation`` (model instances, or ``Record``s), read with one
    kept query, by their parent's key; None when that query cannot be kept."""
    connection = connections[using]
    child, field = relation.related_model, relation.field
    ids = [parent.pk for parent in parents]
    key = ("children", child._meta.label, field.name, len(ids), using, connection.vendor, records)

    def build() -> CompiledQuery:
        queryset = child._default_manager.db_manager(using).all()
        # The column's own IN (a lookup on the foreign key would make each placeholder a string).
        queryset = queryset.filter(In(F(field.attname), params_of("parents", ids)))
        return compile_queryset(queryset, paged=False, records=records)

    query = compiled(key, build)
    if query is None:
        return None
    by_parent: dict[Any, list] = {}
    for row in query.rows(values_of("parents", ids), using=using):
        by_parent.setdefault(getattr(row, field.attname), []).append(row)
    return by_parent


def _children_of_records(parents: list, relation: ManyToOneRel, using: str) -> None:
    """Each record's children by ``relation`` as ``Children`` under the relation's accessor
    (``invoice.lines``), each child holding its parent (``line.invoice``)."""
    by_parent = _children_rows(parents, relation, using, records=True)
    if by_parent is None:
        raise NotCompilable(f"the children of {relation}")  # a record has no related manager
    accessor, name = relation.get_accessor_name(), relation.field.name
    for parent in parents:
        rows = by_parent.get(parent.pk, [])
        for row in rows:
            row.__dict__[name] = parent
        parent.__dict__[accessor] = Children(rows)


def _prefetch_children(parents: list, relation: ManyToOneRel, using: str) -> None:
    """Each parent's children by ``relation``, read with one kept query and put where the ORM's
    prefetch puts them."""
    by_parent = _children_rows(parents, relation, using, records=False)
    if by_parent is None:
        prefetch_related_objects(parents, relation.get_accessor_name())
        return
    field = relation.field
    accessor, name = relation.get_accessor_name(), relation.cache_name
    for parent in parents:
        rows = by_parent.get(parent.pk, [])
        for row in rows:
            field.set_cached_value(row, parent)
        children = getattr(parent, accessor).get_queryset()
        children._result_cache, children._prefetch_done = rows, True
        if not hasattr(parent, "_prefetched_objects_cache"):
            parent._prefetched_objects_cache = {}
        parent._prefetched_objects_cache[name] = children


def compile_queryset(queryset: QuerySet, *, paged: bool, records: bool = False) -> CompiledQuery:
    """Compile a queryset built with ``Param`` placeholders: a ``values()`` one, or one of
    model instances (``select_related`` and prefetches included), given as ``Record``s when
    ``records`` and it has neither ``select_related`` nor a prefetch other than plain reverse
    foreign keys. ``paged``: it was sliced
    ``[OFFSET_SENTINEL : OFFSET_SENTINEL + LIMIT_SENTINEL]`` (or holds a subquery that was),
    whose numbers become the placeholders ``page_offset`` and ``page_limit``."""
    query = queryset.query
    compiler = query.get_compiler(using=queryset.db)
    sql, params = compiler.as_sql()
    params = list(params)
    if paged:
        sql, params = _page_placeholders(sql, params)
    selected = [column for column, _, _ in compiler.select]
    total_at = compiler.annotation_col_map.get(TOTAL, -1)
    converters = tuple(
        (index, tuple(_kept_converter(function) for function in functions), expression)
        for index, (functions, expression) in sorted(compiler.get_converters(selected).items())
        if index != total_at  # read once, by rows_and_total
    )
    if query.values_select or (query.annotation_select and compiler.klass_info is None):
        names = (*query.extra_select, *query.values_select, *query.annotation_select)
        names = tuple(name for name in names if name != TOTAL)
        return CompiledQuery(
            sql=sql,
            params=tuple(params),
            names=names,
            converters=converters,
            total_at=total_at,
        )
    info = compiler.klass_info
    if info is None or query.extra_select or queryset._known_related_objects:
        raise NotCompilable("only values() and model lists are compiled")
    start, end = info["select_fields"][0], info["select_fields"][-1] + 1
    lookups = queryset._prefetch_related_lookups
    children = tuple(
        relation
        for lookup in lookups
        if (relation := _children_relation(queryset.model, lookup)) is not None
    )
    prefetch = tuple(
        lookup for lookup in lookups if _children_relation(queryset.model, lookup) is None
    )
    populators = get_related_populators(info, compiler.select, queryset.db, queryset._fetch_mode)
    related = tuple(populators)
    return CompiledQuery(
        sql=sql,
        params=tuple(params),
        names=(),
        converters=converters,
        model=queryset.model,
        fields=(start, end),
        attnames=tuple(compiler.select[i][0].target.attname for i in range(start, end)),
        annotations=tuple(
            (name, index) for name, index in compiler.annotation_col_map.items() if name != TOTAL
        ),
        prefetch=prefetch,
        children=children,
        related=related,
        fetch_mode=queryset._fetch_mode,
        total_at=total_at,
        records=records and not prefetch and not related,
    )


def _page_placeholders(sql: str, params: list) -> tuple[str, list]:
    """``LIMIT <LIMIT_SENTINEL>`` and ``OFFSET <OFFSET_SENTINEL>`` made placeholders, each put
    among the parameters where its place in the text says."""
    for number, name in ((LIMIT_SENTINEL, PAGE_LIMIT), (OFFSET_SENTINEL, PAGE_OFFSET)):
        token = str(number)
        if sql.count(token) != 1:
            raise NotCompilable(f"the page's {name} is not in the SQL exactly once")
        at = sql.index(token)
        before = sql[:at].replace("%%", "")
        params.insert(before.count("%s"), _Slot(name))
        sql = sql[:at] + "%s" + sql[at + len(token) :]
    return sql, params


def paged(queryset: QuerySet) -> QuerySet:
    """``queryset`` sliced with the sentinel numbers ``compile_queryset(paged=True)`` replaces."""
    return queryset[OFFSET_SENTINEL : OFFSET_SENTINEL + LIMIT_SENTINEL]


def page_values(offset: int, limit: int) -> dict[str, int]:
    return {PAGE_OFFSET: offset, PAGE_LIMIT: limit}


_cache: dict[tuple, CompiledQuery | None] = {}
_lock = threading.Lock()
# Shapes are few (filters given, orderings, page styles per list); a bound keeps a process's
# memory flat whatever its callers ask.
CACHE_LIMIT = 4096


def compiled(key: tuple, build: Callable[[], CompiledQuery]) -> CompiledQuery | None:
    """The query kept under ``key``, built (once) by ``build``; None when ``build`` found the
    shape not compilable (remembered too, so it is not tried on every request)."""
    try:
        return _cache[key]
    except KeyError:
        pass
    try:
        query = build()
    except NotCompilable:
        query = None
    with _lock:
        if len(_cache) >= CACHE_LIMIT:
            _cache.clear()
        return _cache.setdefault(key, query)


def cache_clear() -> None:
    """Forget every kept query (tests that change what a shape compiles to)."""
    with _lock:
        _cache.clear()
