"""Billing's periodic upkeep (run by ``manage.py housekeeping``): the billing job."""

from billing.services.job.renewals import billing_run


def run() -> dict[str, int]:
    report = billing_run()
    return {f"billing {step}": count for step, count in report.counts.items()}
