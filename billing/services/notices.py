"""Billing's e-mails: invoice issued, payment received, payment overdue, suspension warning,
suspension, termination warning, termination, trial ending.

They go to the billing profile's e-mail when one is set, else to the account's owners, admins
and billing members. ``notify`` does not send: it queues a ``billing_notices_send`` task in the
caller's transaction (the task table is in the same database, so a rollback queues nothing and
a commit cannot lose one), and the worker renders and sends it through Django's mail backend
(console by default, SMTP or django-anymail when configured). The billing job and the request
that caused the e-mail never wait for a mail server; the billing job queues one task for a
whole batch of renewals (``notices_queue``).

What the e-mail says about the invoice (its number, due date, amounts) is frozen when it is
queued, so an invoice paid from credit a moment after it was issued is still announced as
issued; the account's name and the plan are read when it is sent.
"""

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.tasks import task
from django.template.loader import render_to_string

from accounts.models import Account, Membership
from accounts.roles import Role
from billing.models import BillingProfile, Invoice, Subscription
from hosting.money import format_amount

logger = logging.getLogger(__name__)

SUBJECTS = {
    "invoice_issued": "Invoice {number} issued",
    "payment_received": "Payment received for invoice {number}",
    "payment_overdue": "Invoice {number} is overdue",
    "suspension_warning": "Your service will be suspended: invoice {number} is unpaid",
    "suspended": "Your service is suspended: invoice {number} is unpaid",
    "termination_warning": "Your service will be deleted: invoice {number} is unpaid",
    "terminated": "Your service was deleted: invoice {number} was not paid",
    "trial_will_end": "Your trial ends soon",
    "payment_action_required": "Confirm the payment of invoice {number}",
}
BILLING_ROLES = (Role.OWNER, Role.ADMIN, Role.BILLING)
# Extra values that are moments (written as ISO 8601 in the task, read back as datetimes).
MOMENTS = frozenset({"suspend_at", "terminate_at"})
# The most notices one task carries (a batch of renewals queues one task per this many).
NOTICES_PER_TASK = 500


def recipients(account: Account) -> list[str]:
    """Who billing writes to for ``account``."""
    profile_email = (
        BillingProfile.objects.filter(account=account).values_list("email", flat=True).first()
    )
    if profile_email:
        return [profile_email]
    emails = Membership.objects.filter(account=account, role__in=BILLING_ROLES).values_list(
        "user__email", flat=True
    )
    return sorted(set(emails))


def plan_label(subscription: Subscription | None) -> str:
    if subscription is None:
        return ""
    return subscription.price.product.name


def instance_label(subscription: Subscription) -> str:
    instance = subscription.server or subscription.bot
    kind = "Server" if subscription.server_id else "Bot"
    return f"{kind} “{instance.name}”" if instance else f"The {plan_label(subscription)} service"


@dataclass(frozen=True)
class Notice:
    """One e-mail to send: its kind, whom it is about, and the invoice as it stood."""

    kind: str
    account_id: str
    subscription_id: str | None = None
    invoice: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_task_argument(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "account": self.account_id,
            "subscription": self.subscription_id,
            "invoice": self.invoice,
            "extra": {
                key: value.isoformat() if key in MOMENTS and value is not None else value
                for key, value in self.extra.items()
            },
        }


def invoice_facts(invoice: Invoice) -> dict[str, Any]:
    """What an e-mail says about ``invoice``, as it is now (JSON for the task)."""
    return {
        "id": invoice.id,
        "number": invoice.number,
        "due_date": invoice.due_date.isoformat() if invoice.due_date else None,
        "amount_remaining": invoice.amount_remaining,
        "total": format_amount(invoice.total, invoice.currency),
        "remaining": format_amount(invoice.amount_remaining, invoice.currency),
    }


def notices_queue(notices: list[Notice]) -> None:
    """Queue ``notices`` for the worker, in the caller's transaction (one task per
    ``NOTICES_PER_TASK``)."""
    for start in range(0, len(notices), NOTICES_PER_TASK):
        chunk = notices[start : start + NOTICES_PER_TASK]
        billing_notices_send.enqueue([notice.as_task_argument() for notice in chunk])


def notify(
    kind: str,
    *,
    account: Account,
    invoice: Invoice | None = None,
    subscription: Subscription | None = None,
    **extra: Any,
) -> None:
    """Queue the ``kind`` e-mail about ``invoice`` / ``subscription`` (sent once the
    transaction commits, by the worker)."""
    subscription_id = subscription.id if subscription else (invoice and invoice.subscription_id)
    notices_queue(
        [
            Notice(
                kind=kind,
                account_id=account.id,
                subscription_id=subscription_id or None,
                invoice=invoice_facts(invoice) if invoice is not None else None,
                extra=extra,
            )
        ]
    )


@task
def billing_notices_send(notices: list[dict[str, Any]]) -> int:
    """The worker's side: render and send each notice; returns how many were sent. A notice
    whose account is gone, or that has nobody to write to, is skipped."""
    sent = 0
    for notice in notices:
        if _send(notice):
            sent += 1
    return sent


def _send(notice: dict[str, Any]) -> bool:
    account = Account.objects.filter(pk=notice["account"]).first()
    if account is None:
        return False
    to = recipients(account)
    if not to:
        return False
    subscription = (
        Subscription.objects.select_related("price__product", "server", "bot")
        .filter(pk=notice["subscription"])
        .first()
        if notice["subscription"]
        else None
    )
    extra = {
        key: datetime.fromisoformat(value) if key in MOMENTS and value else value
        for key, value in notice["extra"].items()
    }
    context: dict[str, Any] = {
        "account": account,
        "subscription": subscription,
        "plan": plan_label(subscription),
        "site_url": settings.SITE_URL,
        **extra,
    }
    facts = notice["invoice"]
    if facts is not None:
        context["invoice"] = {
            **facts,
            "due_date": datetime.fromisoformat(facts["due_date"]) if facts["due_date"] else None,
        }
        context["total"] = facts["total"]
        context["remaining"] = facts["remaining"]
    if subscription is not None:
        context["instance_label"] = instance_label(subscription)
        price = subscription.price
        context["price"] = format_amount(price.unit_amount * subscription.quantity, price.currency)
    kind = notice["kind"]
    subject = SUBJECTS[kind].format(number=facts["number"] if facts else "")
    message = render_to_string(f"billing/email/{kind}.txt", context)
    send_mail(subject=subject, message=message, from_email=None, recipient_list=to)
    return True
