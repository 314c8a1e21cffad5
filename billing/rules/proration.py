"""Proration of a plan or quantity change in the middle of a billing period.

The customer is credited the unused part of what they paid for the current period and charged
the remaining part of the new price, both measured to the second:

    unused = amount * remaining_seconds / period_seconds, rounded half to even

where ``remaining_seconds`` is the whole seconds from the change to the period's end (a
fraction of a second left is not counted) and ``amount`` is the whole line (unit amount *
quantity), so a line is rounded once rather than once per unit. Ties round to the even
integer, so over many changes the rounding favours neither side. The change preview and the
change itself both call ``proration_lines``, so what the preview shows is what is invoiced.
"""

from datetime import datetime, timedelta
from enum import StrEnum
from typing import NamedTuple

from hosting.money import divide_half_even

_SECOND = timedelta(seconds=1)


class ProrationKind(StrEnum):
    """What a proration line is for; the invoice line's description is written from it."""

    # Stripe's wording: "Unused time on <old plan> after <date>" / "Remaining time on <new plan>".
    UNUSED_TIME = "unused_time"
    REMAINING_TIME = "remaining_time"


class ProrationLine(NamedTuple):
    """One proration line: a credit (negative amount) or a charge (positive amount)."""

    kind: ProrationKind
    amount: int


def unused_amount(amount: int, period_start: datetime, period_end: datetime, at: datetime) -> int:
    """The part of ``amount`` (paid for ``period_start`` to ``period_end``) not yet used at ``at``.

    ``amount`` at the period's start, 0 at its end; the rounding rule is the module's.
    """
    if period_end <= period_start:
        raise ValueError("A period must end after it starts.")
    if not period_start <= at <= period_end:
        raise ValueError("The change must happen within the period.")
    period_seconds = (period_end - period_start) // _SECOND
    remaining_seconds = (period_end - at) // _SECOND
    if period_seconds == 0:
        # A period shorter than a second: only its start leaves anything unused.
        return amount if at == period_start else 0
    return divide_half_even(amount * remaining_seconds, period_seconds)


def proration_lines(
    *,
    old_amount: int,
    new_amount: int,
    quantity_old: int,
    quantity_new: int,
    period_start: datetime,
    period_end: datetime,
    at: datetime,
) -> list[ProrationLine]:
    """The lines for changing from ``quantity_old`` * ``old_amount`` to ``quantity_new`` *
    ``new_amount`` (unit amounts in minor units) at ``at`` within the current period.

    The credit for the unused old line comes first, then the charge for the rest of the period
    on the new one; a line that would be zero (a free old plan, a change at the period's very
    end) is left out, so the list may be empty.
    """
    for name, value in (
        ("old_amount", old_amount),
        ("new_amount", new_amount),
        ("quantity_old", quantity_old),
        ("quantity_new", quantity_new),
    ):
        if value < 0:
            raise ValueError(f"{name} must not be negative.")
    credit = -unused_amount(old_amount * quantity_old, period_start, period_end, at)
    charge = unused_amount(new_amount * quantity_new, period_start, period_end, at)
    lines = [
        ProrationLine(ProrationKind.UNUSED_TIME, credit),
        ProrationLine(ProrationKind.REMAINING_TIME, charge),
    ]
    return [line for line in lines if line.amount != 0]
