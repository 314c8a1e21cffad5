"""Subscriptions: ordering a plan, changing it (with proration), canceling it.

Ordering creates the subscription (``incomplete``), its first invoice (the first period, the
setup fee, the coupon's discount, the tax), finalizes it and applies the account's credit when
it covers it. Once that invoice is paid (at once when nothing is owed) the subscription is
``active`` and the server or bot is created (``fulfilment``). A trial starts ``trialing`` and
creates the server or bot at once; its first period is the trial. The order's preview
(``subscription_order_preview``) prices the same lines with the same function, so the summary a
customer confirms is the invoice to the minor unit, and adds the first renewal.

A plan change prorates to the second (``billing.rules.proration``): credit for the unused part
of the old price, a charge for the rest of the period on the new one, discounted and taxed like
any invoice. A positive result is invoiced (``subscription_update``) and collected like a renewal;
a negative one is added to the customer's balance. The preview computes exactly the same lines.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from accounts.actors import Actor
from accounts.models import Account
from billing import transitions
from billing.clock import billing_now
from billing.models import (
    BalanceTransaction,
    BillingProfile,
    BillingReason,
    Coupon,
    CreditNote,
    Invoice,
    InvoiceStatus,
    Price,
    ProductKind,
    PromotionCode,
    Subscription,
    SubscriptionStatus,
)
from billing.representations import subscription_representation
from billing.rules.cycle import renewal_lines
from billing.rules.periods import day_label, period_end
from billing.rules.pricing import PricedLines, price_lines
from billing.rules.proration import ProrationKind, proration_lines
from billing.selectors import tax_decision
from billing.services.credit_notes import credit_note_create
from billing.services.discounts import coupon_check, coupon_for_period, coupon_redeem, discount_end
from billing.services.fulfilment import (
    instance_of,
    instance_terminate,
    plan_bounds,
    subscription_event_record,
    subscription_locked,
    subscription_provision,
    subscription_status_set,
)
from billing.services.gateways import credit_collects, invoice_collect
from billing.services.invoices import invoice_create, invoice_finalize, invoice_void
from billing.services.ledger import balance_change, balance_of, billing_currency_fix
from events.models import Event
from hosting.errors import Conflict, ValidationFailed
from hosting.secrets_box import encrypt_secret
from servers.models import Bot, BotRuntime, Game, Server, ServerStatus
from servers.services import InstanceChanges, instance_update
from servers.services.validation import (
    clean_environment,
    clean_name,
    clean_token,
    quota_check,
    region_of,
    validate_variables,
)


def price_orderable(price: Any) -> Price:
    """An active price of an active product, or a field error."""
    found = (
        Price.objects.select_related("product").filter(pk=price).first()
        if isinstance(price, str)
        else price
        if isinstance(price, Price)
        else None
    )
    if found is None or not found.active or not found.product.active:
        raise ValidationFailed.field("price", "invalid_choice", _("This price is not offered."))
    return found


def order_clean(account: Account, price: Price, order: Any) -> dict[str, Any]:
    """What to create once paid, checked now as the servers app would check it (so a paid
    order does not fail later), within the plan's games, regions and runtimes. A refused field
    is named under ``order.`` (``order.region``), where the request carries it."""
    try:
        return _order_clean(account, price, order)
    except ValidationFailed as refused:
        for item in (refused.details or {}).get("fields", []):
            if item["name"] != "order" and not item["name"].startswith("order."):
                item["name"] = f"order.{item['name']}"
        raise


def _order_clean(account: Account, price: Price, order: Any) -> dict[str, Any]:
    if not isinstance(order, dict):
        raise ValidationFailed.field("order", "invalid", _("order must be an object."))
    product = price.product
    cleaned: dict[str, Any] = {"name": clean_name(order.get("name"))}
    region = region_of(order.get("region"))
    if product.regions and region.slug not in product.regions:
        raise ValidationFailed.field(
            "order.region",
            "not_in_plan",
            _("This plan runs in: %(regions)s.") % {"regions": ", ".join(product.regions)},
        )
    cleaned["region"] = region.slug
    if product.kind == ProductKind.SERVER:
        game = (
            Game.objects.filter(slug=order.get("game")).first()
            if isinstance(order.get("game"), str)
            else None
        )
        if game is None:
            raise ValidationFailed.field(
                "order.game", "invalid_choice", _("Unknown game; choose one from the catalogue.")
            )
        if product.games and game.slug not in product.games:
            raise ValidationFailed.field(
                "order.game",
                "not_in_plan",
                _("This plan runs: %(games)s.") % {"games": ", ".join(product.games)},
            )
        cleaned["game"] = game.slug
        cleaned["variables"] = validate_variables(game, order.get("variables") or {})
        quota_check(account, Server, memory_delta=product.memory_mb, adding=True)
    else:
        runtime = order.get("runtime")
        allowed = product.runtimes or BotRuntime.values
        if runtime not in allowed:
            raise ValidationFailed.field(
                "order.runtime",
                "invalid_choice",
                _("runtime must be one of %(runtimes)s.") % {"runtimes": ", ".join(allowed)},
            )
        command = order.get("start_command")
        if not isinstance(command, str) or not 0 < len(command.strip()) <= 500:
            raise ValidationFailed.field(
                "order.start_command", "required", _("start_command is required (≤ 500).")
            )
        cleaned["runtime"] = runtime
        cleaned["start_command"] = command.strip()
        cleaned["environment"] = clean_environment(order.get("environment") or {})
        cleaned["token_encrypted"] = encrypt_secret(clean_token(order.get("token")))
        quota_check(account, Bot, memory_delta=product.memory_mb, adding=True)
    return cleaned


def _orderable(price: Any, quantity: Any) -> Price:
    price = price_orderable(price)
    if isinstance(quantity, bool) or not isinstance(quantity, int) or quantity != 1:
        # One server or bot per subscription: the quantity is always 1 (it stays in the model
        # for Stripe's shape and for later per-slot plans).
        raise ValidationFailed.field(
            "quantity", "invalid", _("quantity must be 1: a subscription runs one server or bot.")
        )
    return price


@dataclass(frozen=True)
class _OrderTerms:
    """An order of ``price`` at ``at``: its coupon (and the code naming it), its first period
    (the trial, or the first billing period) and its first invoice's lines, priced."""

    price: Price
    at: datetime
    coupon: Coupon | None
    promotion_code: PromotionCode | None
    trial_end: datetime | None
    first_end: datetime
    first: PricedLines

    def subscription(self, account: Account, order: dict[str, Any]) -> Subscription:
        """The subscription this order makes, not saved."""
        return Subscription(
            account=account,
            price=self.price,
            quantity=1,
            order=order,
            billing_cycle_anchor=self.first_end if self.trial_end else self.at,
            current_period_start=self.at,
            current_period_end=self.first_end,
            trial_end=self.trial_end,
            coupon=self.coupon,
            discount_end=(
                discount_end(self.coupon, self.at, self.first_end) if self.coupon else None
            ),
            created_at=self.at,
        )


def _order_terms(
    *,
    account: Account,
    price: Price,
    currency: str,
    promotion_code: str | None,
    coupon: str | None,
) -> _OrderTerms:
    """What an order comes to now; the one place its first invoice's lines are made, so the
    preview and the order price exactly the same lines."""
    now = billing_now(account)
    chosen = code = None
    if promotion_code is not None or coupon is not None:
        chosen, code = coupon_check(
            price=price, at=now, promotion_code=promotion_code, coupon_id=coupon
        )
    trial_end = period_end(now, "day", price.trial_days) if price.trial_days else None
    first_end = trial_end or period_end(now, price.interval, price.interval_count)
    if trial_end:
        lines = [
            {
                "description": f"Trial of {price.product.name} until {day_label(trial_end)}",
                "unit_amount": 0,
                "price": price,
                "period_start": now,
                "period_end": trial_end,
            }
        ]
    else:
        lines = [
            {
                "description": f"{price.product.name} ({day_label(now)} to {day_label(first_end)})",
                "unit_amount": price.unit_amount,
                "price": price,
                "period_start": now,
                "period_end": first_end,
            }
        ]
    if price.setup_fee:
        lines.append(
            {
                "description": f"Setup fee: {price.product.name}",
                "unit_amount": price.setup_fee,
                "price": price,
            }
        )
    priced = price_lines(currency=currency, lines=lines, tax=tax_decision(account), coupon=chosen)
    return _OrderTerms(price, now, chosen, code, trial_end, first_end, priced)


@transaction.atomic
def subscription_order(
    *,
    account: Account,
    price: Any,
    order: Any,
    quantity: int = 1,
    promotion_code: str | None = None,
    coupon: str | None = None,
    actor: Actor,
) -> tuple[Subscription, Invoice]:
    """Order a plan: the subscription, its first invoice (finalized; credit applied when it
    covers it), and the server or bot once paid (at once for a trial or nothing to pay)."""
    price = _orderable(price, quantity)
    currency = billing_currency_fix(account, price.currency)
    cleaned = order_clean(account, price, order)
    terms = _order_terms(
        account=account,
        price=price,
        currency=currency,
        promotion_code=promotion_code,
        coupon=coupon,
    )
    if terms.coupon is not None:
        coupon_redeem(terms.coupon, terms.promotion_code)
    subscription = terms.subscription(account, cleaned)
    subscription.save(force_insert=True)
    subscription_event_record(subscription, "created", actor)
    priced = terms.first
    invoice = invoice_create(
        account=account,
        currency=currency,
        lines=priced.lines,
        tax=priced.tax,
        coupon=terms.coupon if any(line["discount_amount"] for line in priced.lines) else None,
        billing_reason=BillingReason.SUBSCRIPTION_CREATE,
        subscription=subscription,
        period_start=terms.at,
        period_end=terms.first_end,
        actor=actor,
    )
    if terms.trial_end:
        subscription = subscription_locked(subscription)
        subscription_status_set(subscription, SubscriptionStatus.TRIALING, actor=actor)
        subscription_provision(subscription, actor=actor)
    invoice = invoice_finalize(invoice=invoice, actor=actor)
    if invoice.status == InvoiceStatus.OPEN:
        invoice_collect(invoice=invoice, actor=actor)
    subscription.refresh_from_db()
    invoice.refresh_from_db()
    return subscription, invoice


@dataclass(frozen=True)
class OrderPreview:
    """What an order would come to now: its first invoice (``first``, the same lines, tax and
    total the order will invoice), what the account's credit pays of it at once, and the
    invoice of the next period (``renewal``, with the coupon only while it lasts), issued
    ahead of ``renewal_at`` and due then."""

    price: Price
    at: datetime
    coupon: Coupon | None
    promotion_code: PromotionCode | None
    trial_end: datetime | None
    first: PricedLines
    credit_applied: int
    renewal_at: datetime
    renewal_end: datetime
    renewal: PricedLines

    @property
    def total(self) -> int:
        return self.first.total

    @property
    def due_today(self) -> int:
        """What is left to pay now, after the credit, for the server or bot to be created."""
        return self.first.total - self.credit_applied


def _billed_currency_check(account: Account, currency: str) -> None:
    """Refuse another currency than the account's, as ``billing_currency_fix`` does, without
    fixing one: a preview writes nothing."""
    billed_in = (
        BillingProfile.objects.filter(account=account).values_list("currency", flat=True).first()
    )
    if billed_in and billed_in != currency:
        raise Conflict(
            _("This account is billed in %(billed_in)s; it cannot be billed in %(currency)s.")
            % {"billed_in": billed_in, "currency": currency},
            details={"currency": billed_in},
        )


@transaction.atomic  # order_clean checks the quota under the account's row lock, as ordering does
def subscription_order_preview(
    *,
    account: Account,
    price: Any,
    order: Any = None,
    quantity: int = 1,
    promotion_code: str | None = None,
    coupon: str | None = None,
) -> OrderPreview:
    """What ``subscription_order`` with the same arguments would invoice now and at the first
    renewal, refused as it would refuse them (``order`` is checked when given: the dashboard
    shows the amounts before the settings are typed). Nothing is written or redeemed."""
    price = _orderable(price, quantity)
    _billed_currency_check(account, price.currency)
    if order is not None:
        order_clean(account, price, order)
    terms = _order_terms(
        account=account,
        price=price,
        currency=price.currency,
        promotion_code=promotion_code,
        coupon=coupon,
    )
    # The renewal as the billing job will issue it (``cycle.renewal_lines``, the coupon of
    # that period), for the subscription this order would make.
    upcoming = terms.subscription(account, {})
    lines, renewal_end = renewal_lines(upcoming)
    renewal = price_lines(
        currency=price.currency,
        lines=lines,
        tax=terms.first.tax,
        coupon=coupon_for_period(upcoming, terms.first_end),
    )
    credit = 0
    if terms.first.total > 0 and credit_collects(account.pk):
        credit = max(0, min(balance_of(account), terms.first.total))
    return OrderPreview(
        price=price,
        at=terms.at,
        coupon=terms.coupon,
        promotion_code=terms.promotion_code,
        trial_end=terms.trial_end,
        first=terms.first,
        credit_applied=credit,
        renewal_at=terms.first_end,
        renewal_end=renewal_end,
        renewal=renewal,
    )


@dataclass(frozen=True)
class PlanChange:
    """A plan change's amounts: the proration lines priced (discount, tax), what will be
    invoiced (``total`` > 0) or added to the balance (``total`` < 0, as ``credit``)."""

    subscription: Subscription
    price: Price
    at: datetime
    priced: PricedLines | None

    @property
    def total(self) -> int:
        return self.priced.total if self.priced else 0


def _plan_change(subscription: Subscription, new_price: Price, at: datetime) -> PlanChange:
    old = subscription.price
    if new_price.pk == old.pk:
        raise ValidationFailed.field(
            "price", "unchanged", _("The subscription is already on this price.")
        )
    if new_price.product.kind != old.product.kind:
        raise ValidationFailed.field(
            "price",
            "invalid_choice",
            # Translators: Discord is the chat service's name.
            _("A game server plan can only change to another one.")
            if old.product.kind == ProductKind.SERVER
            else _("A discord bot plan can only change to another one."),
        )
    if new_price.currency != old.currency:
        raise ValidationFailed.field(
            "price",
            "currency_mismatch",
            _("This subscription is billed in %(currency)s.") % {"currency": old.currency},
        )
    order = subscription.order
    product = new_price.product
    if product.regions and order.get("region") not in product.regions:
        raise ValidationFailed.field(
            "price", "not_in_plan", _("The new plan does not run in this server's region.")
        )
    if product.games and order.get("game") and order["game"] not in product.games:
        raise ValidationFailed.field(
            "price", "not_in_plan", _("The new plan does not run this game.")
        )
    if subscription.status == SubscriptionStatus.TRIALING or not (
        subscription.current_period_start <= at < subscription.current_period_end
    ):
        return PlanChange(subscription, new_price, at, None)  # a trial is free: nothing to prorate
    start, end = subscription.current_period_start, subscription.current_period_end
    raw = proration_lines(
        old_amount=old.unit_amount,
        new_amount=new_price.unit_amount,
        quantity_old=1,
        quantity_new=1,
        period_start=start,
        period_end=end,
        at=at,
    )
    words = {
        ProrationKind.UNUSED_TIME: f"Unused time on {old.product.name} after {day_label(at)}",
        ProrationKind.REMAINING_TIME: f"Remaining time on {product.name} after {day_label(at)}",
    }
    lines = [
        {
            "description": words[line.kind],
            "unit_amount": line.amount,
            "proration": True,
            "price": old if line.kind == ProrationKind.UNUSED_TIME else new_price,
            "period_start": at,
            "period_end": end,
        }
        for line in raw
    ]
    if not lines:
        return PlanChange(subscription, new_price, at, None)
    priced = price_lines(
        currency=old.currency,
        lines=lines,
        tax=tax_decision(subscription.account),
        coupon=coupon_for_period(subscription, start),
    )
    return PlanChange(subscription, new_price, at, priced)


def subscription_change_preview(*, subscription: Subscription, price: Any) -> PlanChange:
    """What changing to ``price`` now would invoice or credit (nothing is written)."""
    _check_live(subscription, "change the plan of this subscription")
    new_price = price_orderable(price)
    return _plan_change(subscription, new_price, billing_now(subscription.account))


def _check_live(subscription: Subscription, verb: str) -> None:
    if subscription.status in (SubscriptionStatus.CANCELED, SubscriptionStatus.INCOMPLETE):
        raise transitions.refusal("subscription", subscription.status, verb)


@transaction.atomic
def subscription_change(
    *, subscription: Subscription, price: Any, actor: Actor
) -> tuple[Subscription, Invoice | None]:
    """Change to ``price`` now: prorate, invoice (collected like a renewal) or credit the
    balance, and give the server or bot the new plan's resources."""
    subscription = subscription_locked(subscription)
    _check_live(subscription, "change the plan of this subscription")
    new_price = price_orderable(price)
    change = _plan_change(subscription, new_price, billing_now(subscription.account))
    previous_price = subscription.price
    invoice = None
    if change.priced is not None and change.total > 0:
        invoice = invoice_create(
            account=subscription.account,
            currency=previous_price.currency,
            lines=change.priced.lines,
            tax=change.priced.tax,
            billing_reason=BillingReason.SUBSCRIPTION_UPDATE,
            subscription=subscription,
            period_start=change.at,
            period_end=subscription.current_period_end,
            actor=actor,
        )
    # A renewal already issued at the old price and not paid is issued again at the new one.
    for stale in Invoice.objects.filter(
        subscription=subscription,
        billing_reason=BillingReason.SUBSCRIPTION_CYCLE,
        status=InvoiceStatus.OPEN,
        amount_paid=0,
        period_start__gte=subscription.current_period_end,
    ):
        invoice_void(invoice=stale, actor=actor)
    if change.priced is not None and change.total < 0:
        credit = _settle_unpaid(subscription, -change.total, actor=actor)
        if credit > 0:
            balance_change(
                account=subscription.account,
                amount=credit,
                currency=previous_price.currency,
                kind=BalanceTransaction.Kind.PRORATION,
                description=(
                    f"Unused time on {previous_price.product.name} "
                    f"(changed to {new_price.product.name})"
                ),
                actor=actor,
            )
    previous = subscription_representation(subscription)
    subscription.price = new_price
    subscription.save()
    subscription_event_record(subscription, "updated", actor, previous)
    instance = instance_of(subscription)
    if instance is not None:  # the new plan's bounds, and its resources
        plan = plan_bounds(subscription)
        resources = {field: plan[field] for field in ("memory_mb", "cpu_percent", "disk_mb")}
        changes = InstanceChanges(resources=resources, plan=plan)
        instance_update(instance=instance, changes=changes, actor=actor)
    if invoice is not None:
        invoice = invoice_finalize(invoice=invoice, actor=actor)
        if invoice.status == InvoiceStatus.OPEN:
            invoice_collect(invoice=invoice, actor=actor)
        invoice.refresh_from_db()
        if invoice.status == InvoiceStatus.OPEN:
            # Not covered now: collected again at its due date, then dunned like a renewal
            # (the billing job's retries; the subscription is past_due once it is overdue).
            invoice.next_payment_attempt = invoice.due_date
            invoice.save(update_fields=["next_payment_attempt"])
    return subscription, invoice


def _settle_unpaid(subscription: Subscription, credit: int, *, actor: Actor) -> int:
    """Credit for unused time covers only what was paid: the subscription's invoices still owed
    for the current period (a plan change's charge, the period's renewal) absorb it first,
    oldest first: voided when nothing of them was paid or credited and the credit covers them,
    else reduced by a credit note. Returns what is left for the balance."""
    owed = Invoice.objects.filter(
        subscription=subscription,
        status__in=[InvoiceStatus.OPEN, InvoiceStatus.UNCOLLECTIBLE],
        period_start__lt=subscription.current_period_end,
    ).order_by("finalized_at", "id")
    for invoice in owed:
        if credit <= 0:
            break
        part = min(credit, invoice.amount_remaining)
        if part <= 0:
            continue
        untouched = invoice.amount_paid == 0 and invoice.amount_credited == 0
        if untouched and part == invoice.amount_remaining and invoice.status == InvoiceStatus.OPEN:
            invoice_void(invoice=invoice, actor=actor)
        else:
            credit_note_create(
                invoice=invoice,
                amount=part,
                reason=CreditNote.Reason.ORDER_CHANGE,
                refund_to=CreditNote.RefundTo.NONE,
                actor=actor,
                memo="Unused time of a plan change, set against what was still owed.",
            )
        credit -= part
    return credit


@transaction.atomic
def subscription_cancel(
    *, subscription: Subscription, at_period_end: bool, actor: Actor
) -> Subscription:
    """Cancel at the period's end (the service runs until then; can be undone with
    ``subscription_resume``) or now (the server or bot is deleted; open invoices are voided,
    paid time is not refunded: staff can issue a credit note)."""
    subscription = subscription_locked(subscription)
    if subscription.status == SubscriptionStatus.CANCELED:
        raise transitions.refusal("subscription", subscription.status, "cancel this subscription")
    now = billing_now(subscription.account)
    if at_period_end and subscription.status != SubscriptionStatus.INCOMPLETE:
        if subscription.cancel_at_period_end:
            return subscription
        previous = subscription_representation(subscription)
        subscription.cancel_at_period_end = True
        subscription.canceled_at = now
        subscription.save()
        subscription_event_record(subscription, "updated", actor, previous)
        # A renewal issued ahead is for a period that will not be served: not collected.
        _unserved_settle(subscription, at=subscription.current_period_end, actor=actor)
        return subscription
    subscription_end(subscription, at=now, actor=actor)
    return subscription


def _unserved_settle(subscription: Subscription, *, at: datetime, actor: Actor) -> None:
    """Every invoice for a period that starts at or after ``at`` is for a period never served:
    voided when nothing of it was paid, else what was paid of it goes back to the balance and
    what is still owed is forgiven (credit notes; the invoice is then settled)."""
    for unserved in Invoice.objects.filter(
        subscription=subscription,
        period_start__gte=at,
        status__in=[InvoiceStatus.OPEN, InvoiceStatus.UNCOLLECTIBLE],
    ):
        if unserved.amount_paid == 0 and unserved.amount_credited == 0:
            invoice_void(invoice=unserved, actor=actor)
            continue
        _give_back(unserved, actor=actor)
        unserved.refresh_from_db()
        if unserved.amount_remaining > 0:
            credit_note_create(
                invoice=unserved,
                amount=unserved.amount_remaining,
                reason=CreditNote.Reason.ORDER_CHANGE,
                refund_to=CreditNote.RefundTo.NONE,
                actor=actor,
                memo="The subscription ends before this period begins.",
            )
    # Renewals only: a plan change's invoice (or the order's) for a period starting at ``at``
    # was netted against the unused time a plan change already gave back; refunding it too
    # would give the same money back twice (the conservation test found it).
    for ahead in Invoice.objects.filter(
        subscription=subscription,
        status=InvoiceStatus.PAID,
        period_start__gte=at,
        billing_reason=BillingReason.SUBSCRIPTION_CYCLE,
    ):
        _give_back(ahead, actor=actor)


def _give_back(invoice: Invoice, *, actor: Actor) -> None:
    """What was paid of ``invoice`` and not given back yet, to the balance."""
    paid = invoice.total - invoice.amount_credited - invoice.amount_remaining
    if paid > 0:
        credit_note_create(
            invoice=invoice,
            amount=paid,
            reason=CreditNote.Reason.ORDER_CHANGE,
            refund_to=CreditNote.RefundTo.BALANCE,
            actor=actor,
            memo="The subscription ends before this period begins.",
        )


def subscription_end(subscription: Subscription, *, at: datetime, actor: Actor) -> None:
    """End a locked subscription now: canceled, its server or bot deleted, unpaid invoices
    voided (or, once partly paid, left to staff). Every invoice for a period that starts at or
    after the end (a renewal issued days ahead; every invoice of an order that never became
    active) is for a period never served (``_unserved_settle``)."""
    subscription.canceled_at = subscription.canceled_at or at
    subscription.ended_at = at
    # An order never paid in full served nothing: the credit it took goes back.
    never_served = subscription.status == SubscriptionStatus.INCOMPLETE
    # Canceled first: an invoice settled below must not start or revive the subscription.
    subscription_status_set(
        subscription, SubscriptionStatus.CANCELED, actor=actor, verb="cancel this subscription"
    )
    _unserved_settle(
        subscription, at=subscription.current_period_start if never_served else at, actor=actor
    )
    for unpaid in Invoice.objects.filter(
        subscription=subscription, status=InvoiceStatus.OPEN, amount_paid=0
    ):
        invoice_void(invoice=unpaid, actor=actor)
    instance_terminate(subscription, actor=actor)


DELETION_EVENTS = {"server.status_changed": "server", "bot.status_changed": "bot"}


def subscription_end_on_deletion(event: Event) -> None:
    """An event consumer: a plan's server or bot deleted by its customer (its status turns
    ``deleting``) ends its subscription now, as cancelling now would; the dashboard says so
    before deleting. Ending a subscription deletes its instance, which is then already going."""
    kind = DELETION_EVENTS.get(event.type)
    if kind is None or event.data.get("object", {}).get("status") != ServerStatus.DELETING:
        return
    subscription = (
        Subscription.objects.filter(**{f"{kind}_id": event.object_id})
        .exclude(status=SubscriptionStatus.CANCELED)
        .first()
    )
    if subscription is None:
        return
    subscription = subscription_locked(subscription)
    if subscription.status == SubscriptionStatus.CANCELED:
        return
    actor = Actor(user=event.actor_user, api_key=event.actor_api_key, ip=event.actor_ip)
    subscription_end(subscription, at=billing_now(subscription.account), actor=actor)


@transaction.atomic
def subscription_resume(*, subscription: Subscription, actor: Actor) -> Subscription:
    """Undo a cancellation at the period's end, before the period ends."""
    subscription = subscription_locked(subscription)
    if subscription.status == SubscriptionStatus.CANCELED or not subscription.cancel_at_period_end:
        raise Conflict(
            _("This subscription is not set to cancel."), details={"status": subscription.status}
        )
    previous = subscription_representation(subscription)
    subscription.cancel_at_period_end = False
    subscription.canceled_at = None
    subscription.save()
    subscription_event_record(subscription, "updated", actor, previous)
    return subscription
