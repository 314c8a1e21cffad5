"""The staff reports page's choices: a range of months and a currency."""

import re
from datetime import date

from django import forms
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from analytics.reporting import month_start
from hosting.money import SUPPORTED_CURRENCIES

MONTH = re.compile(r"([0-9]{4})-([0-9]{2})", re.ASCII)
DEFAULT_MONTHS = 12
MAX_MONTHS = 120


def _month(value: str) -> date:
    match = MONTH.fullmatch(value or "")
    if match is None or not 1 <= int(match[2]) <= 12 or int(match[1]) < 1970:
        raise forms.ValidationError(_("A month written YYYY-MM, 1970 on."))
    return date(int(match[1]), int(match[2]), 1)


class ReportRangeForm(forms.Form):
    """``start_month`` to ``end_month`` (both included, the 12 months to this one by default,
    at most 120, not past this month) and an optional currency."""

    start_month = forms.CharField(required=False, widget=forms.TextInput(attrs={"type": "month"}))
    end_month = forms.CharField(required=False, widget=forms.TextInput(attrs={"type": "month"}))
    currency = forms.ChoiceField(
        required=False,
        choices=[("", gettext_lazy("Every currency"))]
        + [(c, c) for c in sorted(SUPPORTED_CURRENCIES)],
    )

    def clean(self):
        data = super().clean()
        current = month_start(timezone.now())
        last = _month(data["end_month"]) if data.get("end_month") else current
        if last > current:
            raise forms.ValidationError(_("The range may not end after this month."))
        if data.get("start_month"):
            first = _month(data["start_month"])
        else:
            index = last.year * 12 + last.month - 1 - (DEFAULT_MONTHS - 1)
            first = date(index // 12, index % 12 + 1, 1)
        if first > last:
            raise forms.ValidationError(_("The first month may not be after the last."))
        if (last.year - first.year) * 12 + last.month - first.month >= MAX_MONTHS:
            raise forms.ValidationError(_("At most %(months)s months.") % {"months": MAX_MONTHS})
        data["first"], data["last"] = first, last
        return data
