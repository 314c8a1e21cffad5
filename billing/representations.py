"""The public representations of billing's resources: what the API shows and events carry."""

from typing import Any

from billing.models import (
    BalanceTransaction,
    BillingProfile,
    Coupon,
    CreditNote,
    Invoice,
    InvoiceLine,
    Payment,
    Price,
    Product,
    PromotionCode,
    Subscription,
    TaxRate,
)
from hosting.representations import json_copy, timestamp


def price_representation(price: Price) -> dict[str, Any]:
    """What a product costs in one currency, every ``interval_count`` ``interval``s."""
    return {
        "id": price.id,
        "product": price.product_id,
        "currency": price.currency,
        "unit_amount": price.unit_amount,
        "recurring": {"interval": price.interval, "interval_count": price.interval_count},
        "setup_fee": price.setup_fee,
        "trial_days": price.trial_days,
        "active": price.active,
        "created_at": timestamp(price.created_at),
    }


def product_representation(
    product: Product, *, prices: list[Price] | None = None
) -> dict[str, Any]:
    """A plan and what it provisions; ``prices`` (its active prices) when given."""
    shown = {
        "id": product.id,
        "name": product.name,
        "description": product.description,
        "kind": product.kind,
        "resources": {
            "memory_mb": product.memory_mb,
            "cpu_percent": product.cpu_percent,
            "disk_mb": product.disk_mb,
        },
        "backups": {"limit": product.backup_limit, "storage_mb": product.backup_storage_mb},
        "schedules": {"limit": product.schedule_limit},
        "databases": {"limit": product.database_limit},
        "allocations": {"limit": product.allocation_limit},
        "games": list(product.games),
        "regions": list(product.regions),
        "runtimes": list(product.runtimes),
        "active": product.active,
        "created_at": timestamp(product.created_at),
    }
    if prices is not None:
        shown["prices"] = [price_representation(price) for price in prices]
    return shown


# What an order keeps that is never shown: a bot's token, encrypted until the bot is created.
ORDER_SECRETS = frozenset({"token_encrypted"})


def public_order(order: dict[str, Any]) -> dict[str, Any]:
    """What was ordered (name, region, game, variables; a bot's runtime and command), without
    its secrets."""
    return json_copy({key: value for key, value in order.items() if key not in ORDER_SECRETS})


def subscription_representation(subscription: Subscription) -> dict[str, Any]:
    """A plan billed for one server or bot, and where it stands."""
    return {
        "id": subscription.id,
        "status": subscription.status,
        "price": subscription.price_id,
        "quantity": subscription.quantity,
        "server": subscription.server_id,
        "bot": subscription.bot_id,
        "order": public_order(subscription.order),
        "billing_cycle_anchor": timestamp(subscription.billing_cycle_anchor),
        "current_period_start": timestamp(subscription.current_period_start),
        "current_period_end": timestamp(subscription.current_period_end),
        "trial_end": timestamp(subscription.trial_end),
        "cancel_at_period_end": subscription.cancel_at_period_end,
        "canceled_at": timestamp(subscription.canceled_at),
        "ended_at": timestamp(subscription.ended_at),
        "coupon": subscription.coupon_id,
        "discount_end": timestamp(subscription.discount_end),
        "billing_suspended": subscription.billing_suspended,
        "created_at": timestamp(subscription.created_at),
    }


def billing_profile_representation(profile: BillingProfile) -> dict[str, Any]:
    """Who the account's invoices are made out to. Its ``id`` is its account's: an account has
    one profile, so its events name the customer they are about."""
    return {
        "id": profile.account_id,
        "legal_name": profile.legal_name,
        "email": profile.email,
        "address": {
            "line1": profile.address_line1,
            "line2": profile.address_line2,
            "postal_code": profile.postal_code,
            "city": profile.city,
            "region": profile.region,
            "country": profile.country,
        },
        "vat_id": profile.vat_id,
        "tax_exempt": profile.tax_exempt,
        "payment_gateways": list(profile.payment_gateways),
        "currency": profile.currency or None,
        "updated_at": timestamp(profile.updated_at),
    }


def tax_rate_representation(rate: TaxRate) -> dict[str, Any]:
    """A country's (or region's) tax; ``percentage`` as a string, exact (``"8.875"``)."""
    return {
        "id": rate.id,
        "display_name": rate.display_name,
        "country": rate.country,
        "region": rate.region,
        "percentage": format(rate.percentage.normalize(), "f"),
        "inclusive": rate.inclusive,
        "active": rate.active,
        "created_at": timestamp(rate.created_at),
    }


def coupon_representation(coupon: Coupon) -> dict[str, Any]:
    """A discount and its limits; ``applies_to`` lists product ids (empty: every product);
    ``directly_redeemable``: customers may order with its id, not only with a code."""
    return {
        "id": coupon.id,
        "name": coupon.name,
        "percent_off": (
            None if coupon.percent_off is None else format(coupon.percent_off.normalize(), "f")
        ),
        "amount_off": coupon.amount_off,
        "currency": coupon.currency or None,
        "duration": coupon.duration,
        "duration_in_months": coupon.duration_in_months,
        "max_redemptions": coupon.max_redemptions,
        "times_redeemed": coupon.times_redeemed,
        "redeem_by": timestamp(coupon.redeem_by),
        "applies_to": sorted(product.id for product in coupon.products.all()),
        "directly_redeemable": coupon.directly_redeemable,
        "active": coupon.active,
        "created_at": timestamp(coupon.created_at),
    }


def promotion_code_representation(code: PromotionCode) -> dict[str, Any]:
    """A code customers type, the coupon it redeems, and its own limits."""
    return {
        "id": code.id,
        "code": code.code,
        "coupon": code.coupon_id,
        "active": code.active,
        "max_redemptions": code.max_redemptions,
        "times_redeemed": code.times_redeemed,
        "expires_at": timestamp(code.expires_at),
        "created_at": timestamp(code.created_at),
    }


def invoice_line_representation(line: InvoiceLine) -> dict[str, Any]:
    """A line: what, how many, at what unit amount, for which period."""
    return {
        "id": line.id,
        "description": line.description,
        "price": line.price_id,
        "quantity": line.quantity,
        "unit_amount": line.unit_amount,
        "amount": line.amount,
        "discount_amount": line.discount_amount,
        "tax_amount": line.tax_amount,
        "period": {"start": timestamp(line.period_start), "end": timestamp(line.period_end)},
        "proration": line.proration,
    }


def invoice_representation(
    invoice: Invoice, *, lines: list[InvoiceLine] | None = None
) -> dict[str, Any]:
    """An invoice with its lines (read in position order, unless given: a batch that holds
    them, ``renewal_batch``)."""
    return {
        "id": invoice.id,
        "number": invoice.number,
        "status": invoice.status,
        "billing_reason": invoice.billing_reason,
        "subscription": invoice.subscription_id,
        "currency": invoice.currency,
        "period_start": timestamp(invoice.period_start),
        "period_end": timestamp(invoice.period_end),
        "lines": [
            invoice_line_representation(line)
            for line in (invoice.lines.all() if lines is None else lines)
        ],
        "subtotal": invoice.subtotal,
        "discount": invoice.discount,
        "tax": invoice.tax,
        "total": invoice.total,
        "amount_paid": invoice.amount_paid,
        "amount_credited": invoice.amount_credited,
        "amount_remaining": invoice.amount_remaining,
        "due_date": timestamp(invoice.due_date),
        "customer": json_copy(invoice.buyer),
        "notes": json_copy(invoice.notes),
        "created_at": timestamp(invoice.created_at),
        "finalized_at": timestamp(invoice.finalized_at),
        "paid_at": timestamp(invoice.paid_at),
        "voided_at": timestamp(invoice.voided_at),
        "marked_uncollectible_at": timestamp(invoice.marked_uncollectible_at),
    }


def credit_note_representation(credit_note: CreditNote) -> dict[str, Any]:
    """A credit note: which invoice it corrects, by how much, why, and where the money went."""
    return {
        "id": credit_note.id,
        "number": credit_note.number,
        "invoice": credit_note.invoice_id,
        "currency": credit_note.currency,
        "amount": credit_note.amount,
        "reason": credit_note.reason,
        "memo": credit_note.memo,
        "refund_to": credit_note.refund_to,
        "created_at": timestamp(credit_note.created_at),
    }


def payment_representation(payment: Payment) -> dict[str, Any]:
    """A payment of an invoice through one gateway, with its own status."""
    return {
        "id": payment.id,
        "invoice": payment.invoice_id,
        "gateway": payment.gateway,
        "status": payment.status,
        "amount": payment.amount,
        "amount_refunded": payment.amount_refunded,
        "currency": payment.currency,
        "reference": payment.reference,
        "failure_message": payment.failure_message,
        "created_at": timestamp(payment.created_at),
        "succeeded_at": timestamp(payment.succeeded_at),
        "failed_at": timestamp(payment.failed_at),
        "refunded_at": timestamp(payment.refunded_at),
    }


def balance_transaction_representation(entry: BalanceTransaction) -> dict[str, Any]:
    """One ledger entry: positive adds credit, negative uses it; the balance after it."""
    return {
        "id": entry.id,
        "kind": entry.kind,
        "amount": entry.amount,
        "currency": entry.currency,
        "ending_balance": entry.ending_balance,
        "description": entry.description,
        "invoice": entry.invoice_id,
        "credit_note": entry.credit_note_id,
        "created_at": timestamp(entry.created_at),
    }
