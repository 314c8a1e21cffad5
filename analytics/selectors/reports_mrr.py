"""The MRR report and the churn report, both read from the daily MRR snapshots.

The MRR at a month's start is that of the last snapshot taken on or before its first day (a
snapshot is taken as the day begins: the one of 1 November is the MRR at the end of October);
at its end, that of the month after it (for the current month: the latest snapshot). Each
account's MRR is compared between consecutive snapshots, and a change falls in the month of the
day before the later one:

- from 0 to more: ``new`` if the account never had MRR in this currency before, else
  ``reactivation``;
- from more to 0: ``churn``;
- up: ``expansion``; down: ``contraction``.

Contraction and churn are negative, so a row reconciles: ``mrr_start + new + reactivation +
expansion + contraction + churn == mrr_end``. Movements are per account, not per subscription:
one server upgraded and another cancelled on the same day is their net change.

Before the first snapshot nothing is known, and it counts as 0: the accounts of the first
snapshot ever taken show as new. A deployment starts its history on a month's first day
(``manage.py mrr_snapshot --day``), so that the month after starts with known figures.
"""

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from itertools import groupby
from operator import itemgetter

from django.db.models import Min
from django.utils.translation import gettext_noop

from analytics.models import MrrSnapshot, MrrSnapshotDay
from analytics.reporting import Column, Report, month_after, month_label, months, share

Key = tuple[str, str]  # (account id, currency)
MOVEMENTS = ("new", "reactivation", "expansion", "contraction", "churn")

MRR_COLUMNS = (
    Column("month", "month", gettext_noop("Month")),
    Column("currency", "string", gettext_noop("Currency")),
    Column("mrr_start", "money", gettext_noop("MRR at the start")),
    Column("new", "money", gettext_noop("New")),
    Column("reactivation", "money", gettext_noop("Reactivation")),
    Column("expansion", "money", gettext_noop("Expansion")),
    Column("contraction", "money", gettext_noop("Contraction")),
    Column("churn", "money", gettext_noop("Churn")),
    Column("mrr_end", "money", gettext_noop("MRR at the end")),
)
CHURN_COLUMNS = (
    Column("month", "month", gettext_noop("Month")),
    Column("currency", "string", gettext_noop("Currency")),
    Column("customers_start", "count", gettext_noop("Paying customers at the start")),
    Column("customers_churned", "count", gettext_noop("Of them, paying nothing at the end")),
    Column("customer_churn_rate", "percent", gettext_noop("Customer churn rate")),
    Column("mrr_start", "money", gettext_noop("MRR at the start")),
    Column("churn", "money", gettext_noop("Churn")),
    Column("contraction", "money", gettext_noop("Contraction")),
    Column("expansion", "money", gettext_noop("Expansion")),
    Column("reactivation", "money", gettext_noop("Reactivation")),
    Column("gross_revenue_churn_rate", "percent", gettext_noop("Gross revenue churn rate")),
    Column("net_revenue_churn_rate", "percent", gettext_noop("Net revenue churn rate")),
)


@dataclass
class _History:
    """What the snapshots say over a range of months: the MRR of every account at each month
    boundary, and the movements of each month per currency."""

    at: dict[date, dict[Key, int]] = field(default_factory=dict)
    moved: dict[tuple[date, str], dict[str, int]] = field(
        default_factory=lambda: defaultdict(lambda: dict.fromkeys(MOVEMENTS, 0))
    )

    def currencies(self) -> list[str]:
        found = {currency for state in self.at.values() for _, currency in state}
        return sorted(found | {currency for _, currency in self.moved})

    def total(self, boundary: date, currency: str) -> int:
        return sum(mrr for (_, cur), mrr in self.at[boundary].items() if cur == currency)


def _days(since: date, until: date, currency: str | None) -> Iterator[tuple[date, dict[Key, int]]]:
    """Each snapshot day in ``[since, until]`` with every account's MRR that day, in order;
    the rows are read as a stream, so only one day's accounts are held at a time."""
    taken = MrrSnapshotDay.objects.filter(day__gte=since, day__lte=until).order_by("day")
    rows = MrrSnapshot.objects.filter(day__gte=since, day__lte=until).order_by("day")
    if currency:
        rows = rows.filter(currency=currency)
    stream = rows.values_list("day", "account_id", "currency", "mrr").iterator(chunk_size=5000)
    days = groupby(stream, key=itemgetter(0))
    group = next(days, None)
    for day in taken.values_list("day", flat=True):
        today: dict[Key, int] = {}
        while group is not None and group[0] <= day:
            if group[0] == day:
                today = {(account_id, cur): mrr for _, account_id, cur, mrr in group[1]}
            group = next(days, None)
        yield day, today


def _first_paying_days(currency: str | None) -> dict[Key, date]:
    rows = MrrSnapshot.objects.order_by()
    if currency:
        rows = rows.filter(currency=currency)
    firsts = rows.values("account_id", "currency").annotate(first=Min("day"))
    return {(row["account_id"], row["currency"]): row["first"] for row in firsts}


def _history(first: date, last: date, currency: str | None) -> _History:
    boundaries = [*months(first, last), month_after(last)]
    taken_before = MrrSnapshotDay.objects.filter(day__lte=first).order_by("-day")
    since = taken_before.values_list("day", flat=True).first() or first
    first_paying = _first_paying_days(currency)
    history = _History()
    state: dict[Key, int] = {}
    pending = list(boundaries)
    for day, today in _days(since, boundaries[-1], currency):
        while pending and pending[0] < day:  # the boundaries the previous state stood at
            history.at[pending.pop(0)] = state
        if day > since:
            month = (day - timedelta(days=1)).replace(day=1)
            for key in state.keys() | today.keys():
                before, after = state.get(key, 0), today.get(key, 0)
                if before != after:
                    movement = _movement(key, before, after, day, first_paying)
                    history.moved[(month, key[1])][movement] += after - before
        state = today
    for boundary in pending:
        history.at[boundary] = state
    return history


def _movement(key: Key, before: int, after: int, day: date, first_paying: dict[Key, date]) -> str:
    if before == 0:
        return "new" if first_paying[key] >= day else "reactivation"
    if after == 0:
        return "churn"
    return "expansion" if after > before else "contraction"


def _parameters(first: date, last: date, currency: str | None) -> dict:
    return {"start_month": month_label(first), "end_month": month_label(last), "currency": currency}


def mrr_report(*, first: date, last: date, currency: str | None = None) -> Report:
    """MRR at each month's start and end and its movements in between, per currency."""
    history = _history(first, last, currency)
    rows = []
    for month in months(first, last):
        for cur in history.currencies():
            moved = history.moved.get((month, cur), dict.fromkeys(MOVEMENTS, 0))
            rows.append(
                {
                    "month": month_label(month),
                    "currency": cur,
                    "mrr_start": history.total(month, cur),
                    **moved,
                    "mrr_end": history.total(month_after(month), cur),
                }
            )
    return Report("mrr", _parameters(first, last, currency), MRR_COLUMNS, rows)


def churn_report(*, first: date, last: date, currency: str | None = None) -> Report:
    """Per month and currency: of the customers paying at the start, how many pay nothing at
    the end (the customer churn rate), and the revenue churn rates: gross, what was lost
    (churn and contraction) over the MRR at the start; net, that less what customers added
    (expansion and reactivation), negative when they added more than was lost. Customers won
    during the month are in neither count."""
    history = _history(first, last, currency)
    rows = []
    for month in months(first, last):
        start, end = history.at[month], history.at[month_after(month)]
        for cur in history.currencies():
            paying = {key for key in start if key[1] == cur}
            churned = {key for key in paying if key not in end}
            moved = history.moved.get((month, cur), dict.fromkeys(MOVEMENTS, 0))
            mrr_start = history.total(month, cur)
            lost = -(moved["churn"] + moved["contraction"])
            rows.append(
                {
                    "month": month_label(month),
                    "currency": cur,
                    "customers_start": len(paying),
                    "customers_churned": len(churned),
                    "customer_churn_rate": share(len(churned), len(paying)),
                    "mrr_start": mrr_start,
                    "churn": moved["churn"],
                    "contraction": moved["contraction"],
                    "expansion": moved["expansion"],
                    "reactivation": moved["reactivation"],
                    "gross_revenue_churn_rate": share(lost, mrr_start),
                    "net_revenue_churn_rate": share(
                        lost - moved["expansion"] - moved["reactivation"], mrr_start
                    ),
                }
            )
    return Report("churn", _parameters(first, last, currency), CHURN_COLUMNS, rows)


def mrr_snapshot_latest() -> MrrSnapshotDay | None:
    """The latest day whose MRR was taken (None before the first snapshot)."""
    return MrrSnapshotDay.objects.order_by("-day").first()
