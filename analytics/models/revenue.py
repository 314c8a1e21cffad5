"""The monthly recurring revenue (MRR) of every paying account, taken once a day.

No table says what a subscription cost on a past day: prices, quantities, coupons and statuses
are changed in place. So the MRR is read off the subscriptions once a day
(``analytics.services.snapshots``) and kept here, and the MRR report, its movements (new,
expansion, contraction, churn, reactivation) and churn are worked out from consecutive days
(``analytics.selectors.reports_mrr``).

Rows are keyed by the account's id, not a foreign key: the history of an account outlives it.
"""

from django.db import models
from django.db.models import Q


class MrrSnapshotDay(models.Model):
    """A day whose MRR was taken, and when. A day taken while nobody paid has no
    ``MrrSnapshot`` row but this one, so "everyone at 0" is told apart from "not taken"."""

    day = models.DateField(primary_key=True)
    taken_at = models.DateTimeField()
    accounts = models.PositiveIntegerField(default=0, help_text="Accounts with MRR that day.")

    class Meta:
        ordering = ["-day"]
        verbose_name = "MRR snapshot day"

    def __str__(self) -> str:
        return f"MRR of {self.day:%Y-%m-%d}"


class MrrSnapshot(models.Model):
    """The MRR of one account in one currency on one day, in the currency's minor units: what
    its counted subscriptions bill per month before tax. Only accounts with MRR above 0 have a
    row; no row on a taken day is an MRR of 0."""

    day = models.DateField()
    account_id = models.CharField(max_length=64)
    currency = models.CharField(max_length=3)
    mrr = models.BigIntegerField()
    subscriptions = models.PositiveIntegerField(help_text="Subscriptions that make up the MRR.")

    class Meta:
        ordering = ["-day", "account_id", "currency"]
        verbose_name = "MRR snapshot"
        constraints = [
            models.UniqueConstraint(
                fields=["day", "account_id", "currency"], name="mrrsnapshot_one_per_day"
            ),
            models.CheckConstraint(condition=Q(mrr__gt=0), name="mrrsnapshot_mrr_positive"),
        ]
        indexes = [
            # Whether an account had MRR before a day: a new customer or a reactivation.
            models.Index(fields=["account_id", "currency", "day"], name="mrrsnapshot_account"),
        ]

    def __str__(self) -> str:
        return f"{self.account_id} {self.day:%Y-%m-%d}: {self.mrr} {self.currency}"
