"""Where billing meets the server lifecycle: a subscription's status, and what it does to its
server or bot, through the servers app's own services (never around them).

- Paid first invoice (or a trial, or nothing to pay): the server or bot is created from the
  order with the plan's resources.
- Overdue past the plan's limit: suspended with reason ``billing`` (``billing_suspended``
  remembers billing did it). Paid again: unsuspended, but only when billing suspended it and it
  is still suspended for billing; a suspension by staff is never lifted by a payment.
- Terminated or canceled: deleted through the lifecycle.
"""

from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from accounts.actors import SYSTEM, Actor
from billing import transitions
from billing.models import (
    BillingReason,
    Invoice,
    InvoiceStatus,
    ProductKind,
    Subscription,
    SubscriptionStatus,
)
from billing.representations import subscription_representation
from events.services import changed_attributes, record_event
from hosting.errors import ApplicationError, NotFound
from hosting.secrets_box import decrypt_secret
from servers.models import Instance, ServerStatus
from servers.services import action_request, bot_create, instance_suspend, server_create

BILLING_SUSPENSION_REASON = "Suspended for an unpaid invoice (billing)."


def subscription_event_record(
    subscription: Subscription, event: str, actor: Actor, previous: dict | None = None
) -> None:
    """Record ``subscription.<event>``; an update names what changed (``previous``)."""
    obj = subscription_representation(subscription)
    record_event(
        type=f"subscription.{event}",
        account=subscription.account,
        object_type="subscription",
        obj=obj,
        actor=actor,
        related_id=subscription.server_id or subscription.bot_id or "",
        previous_attributes=changed_attributes(previous, obj) if previous is not None else None,
    )


def subscription_locked(subscription: Subscription) -> Subscription:
    return (
        Subscription.objects.select_for_update(of=("self",))
        .select_related("price__product", "account")
        .get(pk=subscription.pk)
    )


def subscription_status_set(
    subscription: Subscription, new: str, *, actor: Actor, verb: str | None = None
) -> None:
    """Move along one edge of the subscription table, with its ``subscription.updated``
    (``subscription.canceled`` for the end) event; saves. The caller holds the row lock."""
    transitions.check("subscription", subscription.status, new, verb=verb)
    previous = subscription_representation(subscription)
    subscription.status = new
    subscription.save()
    subscription_event_record(
        subscription,
        "canceled" if new == SubscriptionStatus.CANCELED else "updated",
        actor,
        previous,
    )


def instance_of(subscription: Subscription) -> Instance | None:
    """The live server or bot of the subscription (None before provisioning or once deleted)."""
    instance = subscription.server or subscription.bot
    if instance is None or instance.deleted_at is not None:
        return None
    return instance


def plan_bounds(subscription: Subscription) -> dict[str, Any]:
    """What the subscription's plan gives its server or bot: the most a customer may set."""
    product = subscription.price.product
    return {
        "subscription": subscription.id,
        "product": product.name,
        "memory_mb": product.memory_mb,
        "cpu_percent": product.cpu_percent,
        "disk_mb": product.disk_mb,
        "backup_limit": product.backup_limit,
        "backup_storage_mb": product.backup_storage_mb,
        "schedule_limit": product.schedule_limit,
        "database_limit": product.database_limit,
        "allocation_limit": product.allocation_limit,
    }


def subscription_provision(subscription: Subscription, *, actor: Actor) -> None:
    """Create the ordered server or bot with the plan's resources (once)."""
    if subscription.server_id or subscription.bot_id:
        return
    order = dict(subscription.order)
    product = subscription.price.product
    plan = plan_bounds(subscription)
    resources = {field: plan[field] for field in ("memory_mb", "cpu_percent", "disk_mb")}
    if product.kind == ProductKind.SERVER:
        subscription.server = server_create(
            account=subscription.account,
            name=order["name"],
            game=order["game"],
            region=order["region"],
            resources=resources,
            variables=order.get("variables") or {},
            plan=plan,
            actor=actor,
        )
    else:
        subscription.bot = bot_create(
            account=subscription.account,
            name=order["name"],
            region=order["region"],
            runtime=order["runtime"],
            start_command=order["start_command"],
            token=decrypt_secret(order["token_encrypted"]),
            environment=order.get("environment") or {},
            resources=resources,
            plan=plan,
            actor=actor,
        )
        order.pop("token_encrypted", None)  # the bot holds it now, encrypted; not kept twice
        subscription.order = order
    subscription.save()


def _overdue_invoices(subscription: Subscription) -> QuerySet[Invoice]:
    return Invoice.objects.filter(
        subscription=subscription,
        status__in=[InvoiceStatus.OPEN, InvoiceStatus.UNCOLLECTIBLE],
        billing_reason__in=[BillingReason.SUBSCRIPTION_CYCLE, BillingReason.SUBSCRIPTION_UPDATE],
    )


def subscription_invoice_paid(invoice: Invoice, *, actor: Actor, at: datetime) -> None:
    """What a paid invoice does to its subscription: a paid order starts it (and creates the
    server or bot); a subscription in arrears with nothing else overdue is active again, and
    a suspension billing made is lifted."""
    if invoice.subscription_id is None:
        return
    assert invoice.subscription is not None  # its id is set
    subscription = subscription_locked(invoice.subscription)
    if subscription.status == SubscriptionStatus.CANCELED:
        return
    if invoice.billing_reason == BillingReason.SUBSCRIPTION_CREATE:
        if subscription.status == SubscriptionStatus.INCOMPLETE:
            subscription_status_set(subscription, SubscriptionStatus.ACTIVE, actor=actor)
        subscription_provision(subscription, actor=actor)
        return
    if subscription.status not in (SubscriptionStatus.PAST_DUE, SubscriptionStatus.UNPAID):
        return
    if _overdue_invoices(subscription).filter(due_date__lte=at).exclude(pk=invoice.pk).exists():
        return  # another period is still unpaid
    subscription.termination_warned_at = None
    subscription_status_set(subscription, SubscriptionStatus.ACTIVE, actor=actor)
    billing_unsuspend(subscription, actor=actor)


def billing_suspend(subscription: Subscription, *, actor: Actor = SYSTEM) -> bool:
    """Suspend the subscription's server or bot for billing; False if there was none to
    suspend (not provisioned, deleted, or already suspended by someone else)."""
    instance = instance_of(subscription)
    if instance is None or instance.status in (ServerStatus.SUSPENDED, ServerStatus.DELETING):
        return False
    instance_suspend(instance=instance, reason=BILLING_SUSPENSION_REASON, actor=actor)
    subscription.billing_suspended = True
    subscription.save()
    return True


def billing_unsuspend(subscription: Subscription, *, actor: Actor = SYSTEM) -> None:
    """Lift billing's suspension: only if billing made it and it is still billing's."""
    if not subscription.billing_suspended:
        return
    instance = instance_of(subscription)
    if (
        instance is not None
        and instance.status == ServerStatus.SUSPENDED
        and instance.suspended_reason == BILLING_SUSPENSION_REASON
    ):
        try:
            with transaction.atomic():
                action_request(instance=instance, action_type="unsuspend", actor=actor)
        except ApplicationError:
            # Still busy with the suspension itself: the payment stands, and the billing job
            # lifts the suspension once it can (``renewals._unsuspend_pending``).
            return
    subscription.billing_suspended = False
    subscription.save()


def instance_terminate(subscription: Subscription, *, actor: Actor = SYSTEM) -> bool:
    """Delete the subscription's server or bot through the lifecycle; False if none is left."""
    instance = instance_of(subscription)
    if instance is None or instance.status == ServerStatus.DELETING:
        return False
    try:
        with transaction.atomic():
            action_request(instance=instance, action_type="delete", actor=actor)
    except NotFound:
        return False
    except ApplicationError:
        # Busy with another action (its creation, say): the billing job tries again later
        # (``renewals._ended_but_still_running``).
        return False
    return True
