"""Coupons and promotion codes: whether one applies to an order, redeeming it, and which
invoices it discounts.

Customers redeem what staff published: a promotion code, or a coupon's id only when staff
marked that coupon ``directly_redeemable`` (else ``coupon_code_required``, whatever the coupon's
state, so an id seen once, in a code's check or on a subscription, gets round no code's limit,
expiry or deactivation). A coupon is refused, with a field error naming why, when it is
unknown, archived (or its code deactivated), past its ``redeem_by`` (or its code past
``expires_at``), used up (``max_redemptions`` of the coupon or of the code), limited to other
products, or an amount in another currency.

Redeeming takes the coupon's row lock, then the code's, and checks again what staff or other
orders can change meanwhile (archiving, deactivation, direct redemption, the counts), so two
orders cannot take the last redemption and an order checked a moment before a code was
deactivated does not redeem it. Expiry needs no second look: ``redeem_by`` and ``expires_at``
are set once, at creation, and the order's moment does not move.

Duration: ``once`` discounts the order's first invoice only; ``repeating`` every invoice of a
period that starts within ``duration_in_months`` months of the order; ``forever`` every one.
"""

from datetime import datetime

from django.db import transaction
from django.db.models import F
from django.utils.translation import gettext as _

from billing.models import Coupon, CouponDuration, Price, PromotionCode, Subscription
from billing.rules.periods import period_end
from hosting.errors import ValidationFailed


def _refuse(field: str, code: str, message: str) -> ValidationFailed:
    return ValidationFailed.field(field, code, message)


def _refuse_unusable(
    coupon: Coupon, code: PromotionCode | None, field: str, at: datetime | None = None
) -> None:
    """Refuse a code deactivated, expired (at ``at``, when given) or used up, and a coupon
    named by its id that is not directly redeemable, archived, expired or used up."""
    if code is not None:
        if not code.active:
            raise _refuse(field, "coupon_not_found", _("This promotion code does not exist."))
        if at is not None and code.expires_at and code.expires_at <= at:
            raise _refuse(field, "coupon_expired", _("This promotion code has expired."))
        if code.max_redemptions is not None and code.times_redeemed >= code.max_redemptions:
            raise _refuse(field, "coupon_used_up", _("This promotion code has been used up."))
    elif not coupon.directly_redeemable:
        # Before any of the coupon's own state, which a customer holding only its id has no
        # business learning.
        raise _refuse(
            field,
            "coupon_code_required",
            _("This coupon is redeemed with a promotion code: type the code."),
        )
    if not coupon.active:
        raise _refuse(field, "coupon_not_found", _("This coupon is no longer offered."))
    if at is not None and coupon.redeem_by and coupon.redeem_by <= at:
        raise _refuse(field, "coupon_expired", _("This coupon has expired."))
    if coupon.max_redemptions is not None and coupon.times_redeemed >= coupon.max_redemptions:
        raise _refuse(field, "coupon_used_up", _("This coupon has been used up."))


def coupon_check(
    *,
    price: Price,
    at: datetime,
    promotion_code: str | None = None,
    coupon_id: str | None = None,
) -> tuple[Coupon, PromotionCode | None]:
    """The coupon (and the code that names it) that a customer's ``promotion_code`` or
    ``coupon_id`` gives for an order of ``price`` at ``at``; refused with a field error when it
    does not apply. A coupon id is taken only for a ``directly_redeemable`` coupon."""
    field = "promotion_code" if promotion_code is not None else "coupon"
    code = None
    coupon: Coupon | None
    if promotion_code is not None:
        if not isinstance(promotion_code, str) or not promotion_code.strip():
            raise _refuse(field, "invalid", _("Type the promotion code."))
        code = (
            PromotionCode.objects.select_related("coupon")
            .filter(code__iexact=promotion_code.strip())
            .first()
        )
        if code is None:
            raise _refuse(field, "coupon_not_found", _("This promotion code does not exist."))
        coupon = code.coupon
    else:
        coupon = Coupon.objects.filter(pk=coupon_id).first() if isinstance(coupon_id, str) else None
        if coupon is None:
            raise _refuse(field, "coupon_not_found", _("This coupon does not exist."))
    _refuse_unusable(coupon, code, field, at)
    products = [product.id for product in coupon.products.all()]
    if products and price.product_id not in products:
        raise _refuse(field, "coupon_not_applicable", _("This coupon does not apply to this plan."))
    if coupon.amount_off is not None and coupon.currency != price.currency:
        raise _refuse(
            field,
            "coupon_not_applicable",
            _("This coupon takes an amount in %(coupon)s off; the plan is billed in %(plan)s.")
            % {"coupon": coupon.currency, "plan": price.currency},
        )
    return coupon, code


@transaction.atomic
def coupon_redeem(coupon: Coupon, code: PromotionCode | None) -> None:
    """Count one redemption of what ``coupon_check`` accepted (``code`` None: the coupon named
    by its id), checked again under the coupon's and the code's row locks."""
    locked = Coupon.objects.select_for_update().get(pk=coupon.pk)
    locked_code = None
    if code is not None:
        locked_code = PromotionCode.objects.select_for_update().get(pk=code.pk)
    _refuse_unusable(locked, locked_code, "coupon" if code is None else "promotion_code")
    Coupon.objects.filter(pk=coupon.pk).update(times_redeemed=F("times_redeemed") + 1)
    if code is not None:
        PromotionCode.objects.filter(pk=code.pk).update(times_redeemed=F("times_redeemed") + 1)


def discount_end(coupon: Coupon, start: datetime, first_period_end: datetime) -> datetime | None:
    """Until when ``coupon`` discounts a subscription ordered at ``start`` (None: for ever)."""
    if coupon.duration == CouponDuration.ONCE:
        return first_period_end
    if coupon.duration == CouponDuration.REPEATING:
        return period_end(start, "month", coupon.duration_in_months or 1)
    return None


def coupon_for_period(subscription: Subscription, period_start: datetime) -> Coupon | None:
    """The coupon that discounts the invoice of a period starting at ``period_start``."""
    if subscription.coupon_id is None:
        return None
    if subscription.discount_end is not None and period_start >= subscription.discount_end:
        return None
    return subscription.coupon
