"""The OpenAPI examples of the billing API: one value per resource, as its representation
answers it, and the response examples built from them (``billing.api.docs`` uses them).
"""

from drf_spectacular.utils import OpenApiExample

from hosting.api.schema import response_examples

PRICE_EXAMPLE = {
    "id": "price_8Lk2Tq4Wn7Xc5Rb9Mv3HdPz1",
    "product": "prod_3Hx7Lm2Qw9Zr5Tk1Nc8Vb4Gs",
    "currency": "EUR",
    "unit_amount": 1200,
    "recurring": {"interval": "month", "interval_count": 1},
    "setup_fee": 0,
    "trial_days": 0,
    "active": True,
    "created_at": "2026-11-01T09:00:00Z",
}
PRODUCT_EXAMPLE = {
    "id": "prod_3Hx7Lm2Qw9Zr5Tk1Nc8Vb4Gs",
    "name": "Minecraft 4 GB",
    "description": "Up to 20 players.",
    "kind": "server",
    "resources": {"memory_mb": 4096, "cpu_percent": 200, "disk_mb": 20480},
    "backups": {"limit": 3, "storage_mb": 10240},
    "schedules": {"limit": 5},
    "databases": {"limit": 1},
    "allocations": {"limit": 1},
    "games": ["minecraft-java", "minecraft-bedrock"],
    "regions": [],
    "runtimes": [],
    "active": True,
    "created_at": "2026-11-01T09:00:00Z",
    "prices": [PRICE_EXAMPLE],
}
INVOICE_EXAMPLE = {
    "id": "inv_6Tq2Lm9Xw4Zr7Nc1Vb8Hs3K",
    "number": "INV-2026-000042",
    "status": "open",
    "billing_reason": "subscription_cycle",
    "subscription": "sub_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8",
    "currency": "EUR",
    "period_start": "2026-12-01T00:00:00Z",
    "period_end": "2027-01-01T00:00:00Z",
    "lines": [
        {
            "id": "il_2Wn7Xc5Rb9Mv3HdPz1Lk8Tq4",
            "description": "Minecraft 4 GB, December 2026",
            "price": "price_8Lk2Tq4Wn7Xc5Rb9Mv3HdPz1",
            "quantity": 1,
            "unit_amount": 1200,
            "amount": 1200,
            "discount_amount": 0,
            "tax_amount": 228,
            "period": {"start": "2026-12-01T00:00:00Z", "end": "2027-01-01T00:00:00Z"},
            "proration": False,
        }
    ],
    "subtotal": 1200,
    "discount": 0,
    "tax": 228,
    "total": 1428,
    "amount_paid": 0,
    "amount_credited": 0,
    "amount_remaining": 1428,
    "due_date": "2026-12-01T00:00:00Z",
    "customer": {
        "name": "Blockworks GmbH",
        "email": "billing@blockworks.example",
        "address_lines": ["Hauptstraße 5", "10115 Berlin"],
        "country": "DE",
        "vat_id": "",
        "tax_exempt": False,
    },
    "notes": [],
    "created_at": "2026-11-28T00:00:00Z",
    "finalized_at": "2026-11-28T00:00:00Z",
    "paid_at": None,
    "voided_at": None,
    "marked_uncollectible_at": None,
}
PAID_INVOICE_EXAMPLE = {
    **INVOICE_EXAMPLE,
    "status": "paid",
    "amount_paid": 1428,
    "amount_remaining": 0,
    "paid_at": "2026-11-29T10:15:00Z",
}
CREDIT_NOTE_EXAMPLE = {
    "id": "cn_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8",
    "number": "CN-2026-000007",
    "invoice": "inv_6Tq2Lm9Xw4Zr7Nc1Vb8Hs3K",
    "currency": "EUR",
    "amount": 500,
    "reason": "product_unsatisfactory",
    "memo": "Two days of downtime.",
    "refund_to": "balance",
    "created_at": "2026-12-03T14:00:00Z",
}
PAYMENT_EXAMPLE = {
    "id": "pay_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8",
    "invoice": "inv_6Tq2Lm9Xw4Zr7Nc1Vb8Hs3K",
    "gateway": "bank_transfer",
    "status": "succeeded",
    "amount": 1428,
    "amount_refunded": 0,
    "currency": "EUR",
    "reference": "SEPA 2026-11-29 BLOCKWORKS",
    "failure_message": "",
    "created_at": "2026-11-29T10:15:00Z",
    "succeeded_at": "2026-11-29T10:15:00Z",
    "failed_at": None,
    "refunded_at": None,
}
BALANCE_TRANSACTION_EXAMPLE = {
    "id": "btx_9Wd4Tb6Nq2Hx8Lc1Zr5Mv3Kd",
    "kind": "adjustment",
    "amount": 2000,
    "currency": "EUR",
    "ending_balance": 2000,
    "description": "Goodwill credit for the outage of Dec 2",
    "invoice": None,
    "credit_note": None,
    "created_at": "2026-12-03T14:00:00Z",
}
BILLING_PROFILE_EXAMPLE = {
    "id": "acct_7Kq2Xw9Lm4Tz8Rb1Nc5Vd3Hy",
    "legal_name": "Blockworks GmbH",
    "email": "billing@blockworks.example",
    "address": {
        "line1": "Hauptstraße 5",
        "line2": "",
        "postal_code": "10115",
        "city": "Berlin",
        "region": "",
        "country": "DE",
    },
    "vat_id": "DE136695976",
    "tax_exempt": False,
    "payment_gateways": [],
    "currency": "EUR",
    "updated_at": "2026-11-21T15:04:05Z",
}

PRODUCT_LIST_EXAMPLES = response_examples("A game-server plan", None, PRODUCT_EXAMPLE)
PRODUCT_EXAMPLES = response_examples("A game-server plan", "product", PRODUCT_EXAMPLE)
INVOICE_LIST_EXAMPLES = response_examples("An open renewal invoice", None, INVOICE_EXAMPLE)
INVOICE_EXAMPLES = response_examples("An open renewal invoice", "invoice", INVOICE_EXAMPLE)
PAID_INVOICE_EXAMPLES = response_examples("Paid", "invoice", PAID_INVOICE_EXAMPLE)
CARD_PAYMENT_EXAMPLE = {
    **PAYMENT_EXAMPLE,
    "gateway": "stripe",
    "reference": "Visa •••• 4242 (12/2030)",
    "status": "succeeded",
}
PAID_INVOICE_PAY_EXAMPLES = [
    OpenApiExample(
        "Paid by card",
        response_only=True,
        value={
            "invoice": PAID_INVOICE_EXAMPLE,
            "payment": CARD_PAYMENT_EXAMPLE,
            "next_action": None,
        },
    ),
    OpenApiExample(
        "The bank wants the customer",
        response_only=True,
        value={
            "invoice": PAID_INVOICE_EXAMPLE | {"status": "open", "amount_paid": 0},
            "payment": CARD_PAYMENT_EXAMPLE | {"status": "processing", "succeeded_at": None},
            "next_action": {
                "type": "redirect_to_url",
                "client_secret": None,
                "url": "https://hooks.stripe.com/3d_secure_2/hosted?merchant=acct_1Qh&payment_intent=pi_3Qh",
            },
        },
    ),
]
CREDIT_NOTE_LIST_EXAMPLES = response_examples("Credit for downtime", None, CREDIT_NOTE_EXAMPLE)
CREDIT_NOTE_EXAMPLES = response_examples("Credit for downtime", "credit_note", CREDIT_NOTE_EXAMPLE)
PAYMENT_LIST_EXAMPLES = response_examples("A bank transfer", None, PAYMENT_EXAMPLE)
PAYMENT_EXAMPLES = response_examples("A bank transfer", "payment", PAYMENT_EXAMPLE)
BALANCE_TRANSACTION_LIST_EXAMPLES = response_examples(
    "Credit added by staff", None, BALANCE_TRANSACTION_EXAMPLE
)
BALANCE_TRANSACTION_EXAMPLES = response_examples(
    "Credit added by staff", "balance_transaction", BALANCE_TRANSACTION_EXAMPLE
)
BALANCE_EXAMPLES = response_examples(
    "Credit left", "balance", {"available": 2000, "currency": "EUR"}
)
BILLING_PROFILE_EXAMPLES = response_examples(
    "A German business", "billing_profile", BILLING_PROFILE_EXAMPLE
)

SUBSCRIPTION_EXAMPLE = {
    "id": "sub_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8",
    "status": "active",
    "price": "price_8Lk2Tq4Wn7Xc5Rb9Mv3HdPz1",
    "quantity": 1,
    "server": "srv_7Hq2Lm9Xw4Zr1Nc8Vb3Kd5Ts6",
    "bot": None,
    "order": {
        "name": "Survival SMP",
        "region": "eu-central",
        "game": "minecraft-java",
        "variables": {"EULA": "true"},
    },
    "billing_cycle_anchor": "2026-11-01T09:00:00Z",
    "current_period_start": "2026-12-01T09:00:00Z",
    "current_period_end": "2027-01-01T09:00:00Z",
    "trial_end": None,
    "cancel_at_period_end": False,
    "canceled_at": None,
    "ended_at": None,
    "coupon": None,
    "discount_end": None,
    "billing_suspended": False,
    "created_at": "2026-11-01T09:00:00Z",
}
NEW_SUBSCRIPTION_EXAMPLE = {
    **SUBSCRIPTION_EXAMPLE,
    "status": "incomplete",
    "server": None,
    "current_period_start": "2026-11-01T09:00:00Z",
    "current_period_end": "2026-12-01T09:00:00Z",
}
FIRST_INVOICE_EXAMPLE = {
    **INVOICE_EXAMPLE,
    "billing_reason": "subscription_create",
    "period_start": "2026-11-01T09:00:00Z",
    "period_end": "2026-12-01T09:00:00Z",
    "due_date": "2026-11-08T09:00:00Z",
    "created_at": "2026-11-01T09:00:00Z",
    "finalized_at": "2026-11-01T09:00:00Z",
}
PLAN_CHANGE_EXAMPLE = {
    "subscription": "sub_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8",
    "price": "price_2Wn7Xc5Rb9Mv3HdPz1Lk8Tq4",
    "at": "2026-12-16T21:00:00Z",
    "currency": "EUR",
    "lines": [
        {
            "description": "Unused time on Minecraft 4 GB after 16 Dec 2026 21:00",
            "price": "price_8Lk2Tq4Wn7Xc5Rb9Mv3HdPz1",
            "amount": -600,
            "discount_amount": 0,
            "tax_amount": -114,
            "period": {"start": "2026-12-16T21:00:00Z", "end": "2027-01-01T09:00:00Z"},
            "proration": True,
        },
        {
            "description": "Remaining time on Minecraft 8 GB after 16 Dec 2026 21:00",
            "price": "price_2Wn7Xc5Rb9Mv3HdPz1Lk8Tq4",
            "amount": 1200,
            "discount_amount": 0,
            "tax_amount": 228,
            "period": {"start": "2026-12-16T21:00:00Z", "end": "2027-01-01T09:00:00Z"},
            "proration": True,
        },
    ],
    "subtotal": 600,
    "discount": 0,
    "tax": 114,
    "total": 714,
    "outcome": "invoice",
}
ORDER_PREVIEW_EXAMPLE = {
    "price": "price_8Lk2Tq4Wn7Xc5Rb9Mv3HdPz1",
    "currency": "EUR",
    "at": "2026-11-01T09:00:00Z",
    "coupon": "cpn_9Nb1Hd6Fy5Rk8Tz2Qm7Lx4Wc",
    "promotion_code": "WELCOME10",
    "tax_rate": {"percentage": "21", "inclusive": False, "reverse_charge": False, "note": ""},
    "lines": [
        {
            "description": "Minecraft 4 GB (1 Nov 2026 09:00 to 1 Dec 2026 09:00)",
            "price": "price_8Lk2Tq4Wn7Xc5Rb9Mv3HdPz1",
            "amount": 1200,
            "discount_amount": 120,
            "tax_amount": 227,
            "period": {"start": "2026-11-01T09:00:00Z", "end": "2026-12-01T09:00:00Z"},
        },
        {
            "description": "Setup fee: Minecraft 4 GB",
            "price": "price_8Lk2Tq4Wn7Xc5Rb9Mv3HdPz1",
            "amount": 500,
            "discount_amount": 50,
            "tax_amount": 94,
            "period": {"start": None, "end": None},
        },
    ],
    "subtotal": 1700,
    "setup_fee": 500,
    "discount": 170,
    "tax": 321,
    "total": 1851,
    "trial_end": None,
    "credit_applied": 1000,
    "due_today": 851,
    "renewal": {
        "at": "2026-12-01T09:00:00Z",
        "period": {"start": "2026-12-01T09:00:00Z", "end": "2027-01-01T09:00:00Z"},
        "subtotal": 1200,
        "discount": 120,
        "tax": 227,
        "total": 1307,
    },
}
REVERSE_CHARGE_PREVIEW_EXAMPLE = {
    **ORDER_PREVIEW_EXAMPLE,
    "coupon": None,
    "promotion_code": None,
    "tax_rate": {
        "percentage": "0",
        "inclusive": False,
        "reverse_charge": True,
        "note": "Reverse charge: VAT to be accounted for by the recipient (Article 196 of "
        "Directive 2006/112/EC).",
    },
    "lines": [
        {**line, "discount_amount": 0, "tax_amount": 0} for line in ORDER_PREVIEW_EXAMPLE["lines"]
    ],
    "discount": 0,
    "tax": 0,
    "total": 1700,
    "credit_applied": 0,
    "due_today": 1700,
    "renewal": {**ORDER_PREVIEW_EXAMPLE["renewal"], "discount": 0, "tax": 0, "total": 1200},
}
TAX_RATE_EXAMPLE = {
    "id": "txr_5Hd6Fy2Qm7Lx4Wc9Nb1Rk8Tz",
    "display_name": "Sales tax",
    "country": "US",
    "region": "US-NY",
    "percentage": "8.875",
    "inclusive": False,
    "active": True,
    "created_at": "2026-11-01T09:00:00Z",
}
COUPON_EXAMPLE = {
    "id": "cpn_9Nb1Hd6Fy5Rk8Tz2Qm7Lx4Wc",
    "name": "Welcome 10 %",
    "percent_off": "10",
    "amount_off": None,
    "currency": None,
    "duration": "repeating",
    "duration_in_months": 3,
    "max_redemptions": 500,
    "times_redeemed": 42,
    "redeem_by": "2027-01-01T00:00:00Z",
    "applies_to": [],
    "directly_redeemable": False,
    "active": True,
    "created_at": "2026-11-01T09:00:00Z",
}
PROMOTION_CODE_EXAMPLE = {
    "id": "promo_1Hd6Fy5Rk8Tz2Qm7Lx4Wc9Nb",
    "code": "WELCOME10",
    "coupon": "cpn_9Nb1Hd6Fy5Rk8Tz2Qm7Lx4Wc",
    "active": True,
    "max_redemptions": None,
    "times_redeemed": 17,
    "expires_at": None,
    "created_at": "2026-11-01T09:00:00Z",
}
BILLING_CLOCK_EXAMPLE = {
    "customer": "acct_3Kd5Ts6Hq2Lm9Xw4Zr1Nc8Vb",
    "now": "2027-02-01T09:00:00Z",
    "runs": 31,
    "counts": {"renewals": 1, "period_started": 1, "collection_attempts": 0},
}

SUBSCRIPTION_LIST_EXAMPLES = response_examples("A monthly server plan", None, SUBSCRIPTION_EXAMPLE)
SUBSCRIPTION_EXAMPLES = response_examples(
    "A monthly server plan", "subscription", SUBSCRIPTION_EXAMPLE
)
ORDER_EXAMPLES = [
    OpenApiExample(
        "Ordered, waiting for payment",
        value={"subscription": NEW_SUBSCRIPTION_EXAMPLE, "invoice": FIRST_INVOICE_EXAMPLE},
        response_only=True,
    )
]
CHANGE_EXAMPLES = [
    OpenApiExample(
        "Upgraded: the difference invoiced",
        value={
            "subscription": {**SUBSCRIPTION_EXAMPLE, "price": PLAN_CHANGE_EXAMPLE["price"]},
            "invoice": {**INVOICE_EXAMPLE, "billing_reason": "subscription_update"},
        },
        response_only=True,
    )
]
PLAN_CHANGE_EXAMPLES = response_examples("An upgrade half-way", "plan_change", PLAN_CHANGE_EXAMPLE)
ORDER_PREVIEW_EXAMPLES = [
    *response_examples(
        "A code, a setup fee and VAT; part paid from credit",
        "order_preview",
        ORDER_PREVIEW_EXAMPLE,
    ),
    *response_examples(
        "A business in another EU country (reverse charge)",
        "order_preview",
        REVERSE_CHARGE_PREVIEW_EXAMPLE,
    ),
]
CANCELED_EXAMPLES = response_examples(
    "Set to cancel at the period's end",
    "subscription",
    {**SUBSCRIPTION_EXAMPLE, "cancel_at_period_end": True, "canceled_at": "2026-12-20T10:00:00Z"},
)
TAX_RATE_LIST_EXAMPLES = response_examples("New York sales tax", None, TAX_RATE_EXAMPLE)
TAX_RATE_EXAMPLES = response_examples("New York sales tax", "tax_rate", TAX_RATE_EXAMPLE)
COUPON_LIST_EXAMPLES = response_examples("10 % for three months", None, COUPON_EXAMPLE)
COUPON_EXAMPLES = response_examples("10 % for three months", "coupon", COUPON_EXAMPLE)
PROMOTION_CODE_LIST_EXAMPLES = response_examples("A welcome code", None, PROMOTION_CODE_EXAMPLE)
PROMOTION_CODE_EXAMPLES = response_examples(
    "A welcome code", "promotion_code", PROMOTION_CODE_EXAMPLE
)
COUPON_VALIDATION_EXAMPLES = response_examples(
    "It applies",
    "coupon_validation",
    {"coupon": COUPON_EXAMPLE, "promotion_code": PROMOTION_CODE_EXAMPLE},
)
BILLING_CLOCK_EXAMPLES = response_examples("A month later", "billing_clock", BILLING_CLOCK_EXAMPLE)


STAFF_PRODUCT_EXAMPLES = [
    OpenApiExample("A game-server plan", value={"product": PRODUCT_EXAMPLE}, response_only=True)
]
PRICE_EXAMPLES = [OpenApiExample("Monthly", value={"price": PRICE_EXAMPLE}, response_only=True)]
