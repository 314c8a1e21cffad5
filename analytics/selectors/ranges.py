"""The range of time a query asks for, read one way by every analytics endpoint that takes
``start`` and ``end``.

A range given by one end only is widened by a default length. Nothing is measured before the
Unix epoch, so an end at or before it is refused before anything is subtracted from it, and
no bound is ever moved past year 1 or 9999: the arithmetic stays inside the calendar, and a
query at its edges gets a 400 naming a parameter it sent, never a 500.
"""

from datetime import UTC, datetime, timedelta

from django.utils.translation import gettext as _

from hosting.errors import InvalidParameter

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def asked_range(
    start: datetime | None,
    end: datetime | None,
    *,
    default: timedelta,
    longest: timedelta,
    latest: datetime,
    now: datetime,
) -> tuple[datetime, datetime]:
    """``[start, end)`` in UTC: a missing ``end`` is ``now``, a missing ``start`` ``default``
    before the end; cut to what can have been measured (from the epoch to ``latest``). Refused
    with 400 ``invalid_parameter`` naming ``end`` (at or before the epoch, or not after
    ``start``) or ``start`` (not before ``latest`` or the end, or more than ``longest`` before
    the end)."""
    if end is not None and end <= EPOCH:
        raise InvalidParameter.named(
            "end",
            "invalid",
            # Translators: "end" is the query parameter's name; %(epoch)s a UTC time (1970).
            _("end must be after %(epoch)s: nothing was measured before.")
            % {"epoch": _stamp(EPOCH)},
        )
    if start is not None and start >= latest:
        raise InvalidParameter.named(
            "start",
            "invalid",
            # Translators: "start" is the query parameter's name; %(latest)s a UTC time.
            _("start must be before %(latest)s.") % {"latest": _stamp(latest)},
        )
    end_given = end is not None
    end = min(end if end_given else now, latest)
    # end is after the epoch here, so end - default is a date of the calendar.
    start = max(end - default if start is None else start, EPOCH)
    if end <= start:
        if not end_given:
            raise InvalidParameter.named(
                "start", "invalid", _("start must be before end (by default now).")
            )
        raise InvalidParameter.named("end", "invalid", _("end must be after start."))
    if end - start > longest:
        raise InvalidParameter.named(
            "start",
            "invalid",
            _("A range of at most %(days)s days.") % {"days": f"{longest.days:,}"},
        )
    return start.astimezone(UTC), end.astimezone(UTC)
