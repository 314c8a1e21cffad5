"""The OpenAPI documentation of the billing API (summaries, examples, documented errors).

Each ``*_DOCS`` is the ``extend_schema_view`` of the viewset of that name.
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema

from billing.api.examples import (
    BALANCE_EXAMPLES,
    BALANCE_TRANSACTION_EXAMPLES,
    BALANCE_TRANSACTION_LIST_EXAMPLES,
    BILLING_CLOCK_EXAMPLES,
    BILLING_PROFILE_EXAMPLES,
    CANCELED_EXAMPLES,
    CHANGE_EXAMPLES,
    COUPON_EXAMPLES,
    COUPON_LIST_EXAMPLES,
    COUPON_VALIDATION_EXAMPLES,
    CREDIT_NOTE_EXAMPLES,
    CREDIT_NOTE_LIST_EXAMPLES,
    INVOICE_EXAMPLES,
    INVOICE_LIST_EXAMPLES,
    ORDER_EXAMPLES,
    ORDER_PREVIEW_EXAMPLES,
    PAID_INVOICE_EXAMPLES,
    PAID_INVOICE_PAY_EXAMPLES,
    PAYMENT_EXAMPLES,
    PAYMENT_LIST_EXAMPLES,
    PLAN_CHANGE_EXAMPLES,
    PRICE_EXAMPLES,
    PRODUCT_EXAMPLE,
    PRODUCT_EXAMPLES,
    PRODUCT_LIST_EXAMPLES,
    PROMOTION_CODE_EXAMPLES,
    PROMOTION_CODE_LIST_EXAMPLES,
    STAFF_PRODUCT_EXAMPLES,
    SUBSCRIPTION_EXAMPLES,
    SUBSCRIPTION_LIST_EXAMPLES,
    TAX_RATE_EXAMPLES,
    TAX_RATE_LIST_EXAMPLES,
)
from billing.api.serializers.balance import (
    BalanceSerializer,
    BalanceTransactionCreateSerializer,
    BalanceTransactionSerializer,
)
from billing.api.serializers.clock import BillingClockAdvanceSerializer, BillingClockSerializer
from billing.api.serializers.coupons import (
    CouponCreateSerializer,
    CouponSerializer,
    CouponUpdateSerializer,
    CouponValidateSerializer,
    CouponValidationSerializer,
    PromotionCodeCreateSerializer,
    PromotionCodeSerializer,
)
from billing.api.serializers.credit_notes import CreditNoteCreateSerializer, CreditNoteSerializer
from billing.api.serializers.invoices import (
    InvoiceMarkPaidSerializer,
    InvoicePayAnswerSerializer,
    InvoicePaySerializer,
    InvoiceSerializer,
    PaymentSerializer,
)
from billing.api.serializers.products import (
    PriceCreateSerializer,
    PriceSerializer,
    ProductCreateSerializer,
    ProductSerializer,
    ProductUpdateSerializer,
)
from billing.api.serializers.profile import (
    BillingProfileSerializer,
    BillingProfileUpdateSerializer,
    StaffBillingProfileUpdateSerializer,
)
from billing.api.serializers.subscriptions import (
    OrderPreviewSerializer,
    PlanChangeSerializer,
    SubscriptionCancelSerializer,
    SubscriptionChangeResultSerializer,
    SubscriptionOrderResultSerializer,
    SubscriptionOrderSerializer,
    SubscriptionPriceSerializer,
    SubscriptionSerializer,
)
from billing.api.serializers.tax_rates import TaxRateCreateSerializer, TaxRateSerializer
from hosting.api.schema import CONFLICT, envelope, error_doc

# Built once each: every envelope() call makes a new component class of the same name.
PRODUCT_RESPONSE = envelope("product", ProductSerializer())
INVOICE_RESPONSE = envelope("invoice", InvoiceSerializer())
CREDIT_NOTE_RESPONSE = envelope("credit_note", CreditNoteSerializer())
PAYMENT_RESPONSE = envelope("payment", PaymentSerializer())
BALANCE_TRANSACTION_RESPONSE = envelope("balance_transaction", BalanceTransactionSerializer())
BALANCE_RESPONSE = envelope("balance", BalanceSerializer())
BILLING_PROFILE_RESPONSE = envelope("billing_profile", BillingProfileSerializer())
SUBSCRIPTION_RESPONSE = envelope("subscription", SubscriptionSerializer())
PLAN_CHANGE_RESPONSE = envelope("plan_change", PlanChangeSerializer())
ORDER_PREVIEW_RESPONSE = envelope("order_preview", OrderPreviewSerializer())
COUPON_VALIDATION_RESPONSE = envelope("coupon_validation", CouponValidationSerializer())
BILLING_CLOCK_RESPONSE = envelope("billing_clock", BillingClockSerializer())

PDF_RESPONSE = OpenApiResponse(
    OpenApiTypes.BINARY,
    description="The PDF (`application/pdf`; with `Accept: application/octet-stream` and not "
    "`application/pdf`, the same bytes typed so), as a download named after the document's "
    "number.",
)
# The PDF, and the same bytes as application/octet-stream for a client that asks for that
# (``Accept``): generated clients (openapi-python-client) read that type as bytes as it is.
PDF_RESPONSES = {
    (200, "application/pdf"): PDF_RESPONSE,
    (200, "application/octet-stream"): PDF_RESPONSE,
}
DRAFT_HAS_NO_PDF = error_doc(
    409,
    "invalid_state",
    "`invalid_state` (details.status): a draft has no PDF until it is finalized.",
    "A draft invoice has no PDF yet: it is drawn once the invoice is finalized.",
    {"status": "draft"},
)
FORBIDDEN_TRANSITION = (
    "`invalid_state` (details.status, details.allowed_statuses) when the invoice's status does "
    "not allow this"
)
CARDS_NOT_OFFERED = error_doc(
    422,
    "payment_method_not_supported",
    "`payment_method_not_supported`: `card` when the service has no Stripe settings, or the "
    "hosting company gave this account its own payment gateways without cards.",
    "Cards are not offered here: this service has no Stripe settings.",
)
PAY_CONFLICT = error_doc(
    409,
    "invalid_state",
    f"{FORBIDDEN_TRANSITION}; `conflict` (details.balance) when the account has no credit.",
    "Cannot pay this invoice: the invoice is void.",
    {"status": "void", "allowed_statuses": []},
)
INVOICE_TRANSITION_CONFLICT = error_doc(
    409,
    "invalid_state",
    f"{FORBIDDEN_TRANSITION}.",
    "Cannot mark this invoice paid: the invoice is paid.",
    {"status": "paid", "allowed_statuses": []},
)
VOID_CONFLICT = error_doc(
    409,
    "invalid_state",
    f"{FORBIDDEN_TRANSITION}; `conflict` (details.amount_paid) when part of it is paid: issue "
    "a credit note instead.",
    "Cannot void this invoice: the invoice is paid.",
    {"status": "paid", "allowed_statuses": []},
)
CREDIT_NOTE_CONFLICT = error_doc(
    409,
    "invalid_state",
    "`invalid_state` (details.status): a draft or void invoice has nothing to credit.",
    "A draft invoice has nothing to credit: edit or drop the draft instead.",
    {"status": "draft", "allowed_statuses": []},
)
NO_SUCH_INVOICE = error_doc(
    404,
    "not_found",
    "`not_found`: no invoice with the id in `invoice`.",
    "No invoice with this id.",
)
BALANCE_CONFLICT = error_doc(
    409,
    "conflict",
    "`conflict`: the credit would go below zero (details.balance), or the account is billed "
    "in another currency (details.currency).",
    "The account has 500 in credit; 2000 cannot be taken from it.",
    {"balance": 500},
)
CUSTOMER_ID = OpenApiParameter(
    "customer_id", str, OpenApiParameter.PATH, description="The account id (`acct_...`)."
)
LIST_NOTE = (
    "List filters take one value, a comma-separated list, or the parameter repeated; times "
    "are ISO 8601 (`created_after`/`due_after` inclusive, `..._before` exclusive)."
)


# ProductViewSet
PRODUCT_DOCS = dict(
    list=extend_schema(
        summary="List products",
        description="The plans on sale, newest first, each with its active prices (one per "
        "currency and interval). Filter by `kind` or by a `currency` they are sold in.",
        examples=PRODUCT_LIST_EXAMPLES,
        tags=["Products"],
    ),
    retrieve=extend_schema(
        summary="Get a product",
        description="A plan on sale with its active prices; an archived one is 404.",
        responses=PRODUCT_RESPONSE,
        examples=PRODUCT_EXAMPLES,
        tags=["Products"],
    ),
)


# InvoiceViewSet
INVOICE_DOCS = dict(
    list=extend_schema(
        summary="List invoices",
        description=f"The account's invoices with their lines, newest first. {LIST_NOTE}",
        examples=INVOICE_LIST_EXAMPLES,
        tags=["Invoices"],
    ),
    retrieve=extend_schema(
        summary="Get an invoice",
        responses=INVOICE_RESPONSE,
        examples=INVOICE_EXAMPLES,
        tags=["Invoices"],
    ),
    pdf=extend_schema(
        summary="Download an invoice's PDF",
        description="The invoice as it was issued: numbered, with the seller's and buyer's "
        "details of the day it was finalized. Drafts have none (409 `invalid_state`).",
        responses={**PDF_RESPONSES, 409: DRAFT_HAS_NO_PDF},
        tags=["Invoices"],
    ),
    pay=extend_schema(
        summary="Pay an invoice",
        description="`source: credit` applies the account's credit (`GET /v1/balance`), as much "
        "as there is up to what is owed: the invoice is `paid` once nothing remains, otherwise "
        "`amount_remaining` shrinks (no credit: 409 `conflict`). `source: card` charges a saved "
        "card (`payment_method`, else the default) for what remains, with the customer present: "
        "`payment.status` `succeeded` (the invoice is paid), `failed` (`failure_message`), or "
        "`processing` with a `next_action` when the bank wants the customer to confirm (3-D "
        "Secure): send them to `next_action.url`, or give `next_action.client_secret` to "
        "Stripe.js; the outcome then reaches the invoice by itself (the dashboard's return page, "
        "Stripe's notification or the reconciliation). One card payment at a time per invoice "
        "(409 `conflict`, `details.payment`). Without Stripe settings `card` is 422 "
        "`payment_method_not_supported`; an unknown card is 400 (`payment_method`, `not_found`). "
        "Each application is a payment (`GET /v1/payments`).",
        request=InvoicePaySerializer,
        responses={
            200: InvoicePayAnswerSerializer,
            409: PAY_CONFLICT,
            422: CARDS_NOT_OFFERED,
        },
        examples=[
            OpenApiExample("With credit", value={"source": "credit"}, request_only=True),
            OpenApiExample(
                "With a saved card",
                request_only=True,
                value={"source": "card", "payment_method": "pm_6Vd2Kq8Lw3Nz7Tc1Rb5Xy9Hm"},
            ),
            *PAID_INVOICE_PAY_EXAMPLES,
        ],
        tags=["Invoices"],
    ),
)


# CreditNoteViewSet
CREDIT_NOTE_DOCS = dict(
    list=extend_schema(
        summary="List credit notes",
        description=f"Corrections of the account's invoices, newest first. {LIST_NOTE}",
        examples=CREDIT_NOTE_LIST_EXAMPLES,
        tags=["Credit notes"],
    ),
    retrieve=extend_schema(
        summary="Get a credit note",
        responses=CREDIT_NOTE_RESPONSE,
        examples=CREDIT_NOTE_EXAMPLES,
        tags=["Credit notes"],
    ),
    pdf=extend_schema(
        summary="Download a credit note's PDF",
        description="The credit note as it was issued, naming the invoice it corrects.",
        responses={**PDF_RESPONSES},
        tags=["Credit notes"],
    ),
)


# BalanceTransactionViewSet
BALANCE_TRANSACTION_DOCS = dict(
    list=extend_schema(
        summary="List balance transactions",
        description="The account's credit ledger, newest entry first: credit added by staff, "
        "credit notes, overpayments (positive) and credit applied to invoices (negative); "
        f"each names its cause and the balance after it. {LIST_NOTE}",
        examples=BALANCE_TRANSACTION_LIST_EXAMPLES,
        tags=["Balance"],
    ),
    retrieve=extend_schema(
        summary="Get a balance transaction",
        responses=BALANCE_TRANSACTION_RESPONSE,
        examples=BALANCE_TRANSACTION_EXAMPLES,
        tags=["Balance"],
    ),
)


# BalanceViewSet
BALANCE_DOCS = dict(
    retrieve=extend_schema(
        summary="Get the balance",
        description="The account's credit: the sum of its ledger, never negative, in its "
        "billing currency (null before anything was billed or credited).",
        responses=BALANCE_RESPONSE,
        examples=BALANCE_EXAMPLES,
        tags=["Balance"],
    ),
)


# PaymentViewSet
PAYMENT_DOCS = dict(
    list=extend_schema(
        summary="List payments",
        description="Money received (or tried) for the account's invoices, newest first, with "
        f"its own status (`processing`, `succeeded`, `failed`, `refunded`). {LIST_NOTE}",
        examples=PAYMENT_LIST_EXAMPLES,
        tags=["Payments"],
    ),
    retrieve=extend_schema(
        summary="Get a payment",
        responses=PAYMENT_RESPONSE,
        examples=PAYMENT_EXAMPLES,
        tags=["Payments"],
    ),
)


PROFILE_CHANGE = (
    "Any of the fields; empty text clears one. `country` is an ISO 3166-1 alpha-2 code in any "
    "case; `vat_id` is checked offline for the country (format and check digits; codes "
    "`invalid_format`, `invalid_length`, `invalid_checksum`, `country_mismatch`, "
    "`unsupported_country`, `country_required`) and stored normalized. Invoices finalized "
    "from now on carry the new details; issued ones never change. The billing `currency` is "
    "fixed by the first invoice and not set here."
)

# BillingProfileViewSet
BILLING_PROFILE_DOCS = dict(
    retrieve=extend_schema(
        summary="Get the billing profile",
        description="Who the account's invoices are made out to.",
        responses=BILLING_PROFILE_RESPONSE,
        examples=BILLING_PROFILE_EXAMPLES,
        tags=["Billing profile"],
    ),
    partial_update=extend_schema(
        summary="Change the billing profile",
        description=f"{PROFILE_CHANGE} The tax exemption and the payment gateways are set by "
        "the hosting company's staff: sending `tax_exempt` or `payment_gateways` is 400 "
        "`validation_failed` with code `staff_only`.",
        request=BillingProfileUpdateSerializer,
        responses=BILLING_PROFILE_RESPONSE,
        examples=[
            OpenApiExample(
                "A German business",
                value={
                    "legal_name": "Blockworks GmbH",
                    "address_line1": "Hauptstraße 5",
                    "postal_code": "10115",
                    "city": "Berlin",
                    "country": "DE",
                    "vat_id": "DE 136 695 976",
                },
                request_only=True,
            ),
            *BILLING_PROFILE_EXAMPLES,
        ],
        tags=["Billing profile"],
    ),
)


# AdminInvoiceViewSet
ADMIN_INVOICE_DOCS = dict(
    list=extend_schema(
        summary="List every customer's invoices",
        description="Staff keys with `admin:read`: all invoices, newest first; `account` "
        f"narrows them to one customer. {LIST_NOTE}",
        examples=INVOICE_LIST_EXAMPLES,
        tags=["Staff"],
    ),
    retrieve=extend_schema(
        summary="Get any customer's invoice",
        responses=INVOICE_RESPONSE,
        examples=INVOICE_EXAMPLES,
        tags=["Staff"],
    ),
    pdf=extend_schema(
        summary="Download any customer's invoice PDF",
        responses={**PDF_RESPONSES, 409: DRAFT_HAS_NO_PDF},
        tags=["Staff"],
    ),
    mark_paid=extend_schema(
        summary="Mark an invoice paid (bank transfer)",
        description="Records a payment outside (a bank transfer) of what remains to be paid, "
        "with its reference, and marks the invoice `paid`. Only an `open` or `uncollectible` "
        "invoice can be paid.",
        request=InvoiceMarkPaidSerializer,
        responses={200: INVOICE_RESPONSE, 409: INVOICE_TRANSITION_CONFLICT},
        examples=[
            OpenApiExample(
                "A SEPA transfer",
                value={"reference": "SEPA 2026-11-29 BLOCKWORKS"},
                request_only=True,
            ),
            *PAID_INVOICE_EXAMPLES,
        ],
        tags=["Staff"],
    ),
    void=extend_schema(
        summary="Void an invoice",
        description="Cancels an `open` or `uncollectible` invoice that nobody has paid any of; "
        "it keeps its number. No body.",
        request=None,
        responses={200: INVOICE_RESPONSE, 409: VOID_CONFLICT},
        examples=INVOICE_EXAMPLES,
        tags=["Staff"],
    ),
    mark_uncollectible=extend_schema(
        summary="Mark an invoice uncollectible",
        description="Stops collecting an `open` invoice; it can still be paid later. No body.",
        request=None,
        responses={200: INVOICE_RESPONSE, 409: INVOICE_TRANSITION_CONFLICT},
        examples=INVOICE_EXAMPLES,
        tags=["Staff"],
    ),
)


# AdminCreditNoteViewSet
ADMIN_CREDIT_NOTE_DOCS = dict(
    create=extend_schema(
        summary="Issue a credit note",
        description="Corrects a finalized invoice by `amount` (never more than its total in "
        "all). `refund_to`: `none` forgives what is still owed (an invoice left owing nothing "
        "is paid); `balance` gives what was paid back as credit; `refunded` records that it "
        "went back outside. Numbered from its own gapless series (`CN-2026-000001`). An "
        "amount past what can be credited that way is 400 `validation_failed`.",
        request=CreditNoteCreateSerializer,
        responses={201: CREDIT_NOTE_RESPONSE, 404: NO_SUCH_INVOICE, 409: CREDIT_NOTE_CONFLICT},
        examples=[
            OpenApiExample(
                "Credit for downtime",
                value={
                    "invoice": "inv_6Tq2Lm9Xw4Zr7Nc1Vb8Hs3K",
                    "amount": 500,
                    "reason": "product_unsatisfactory",
                    "refund_to": "balance",
                    "memo": "Two days of downtime.",
                },
                request_only=True,
            ),
            *CREDIT_NOTE_EXAMPLES,
        ],
        tags=["Staff"],
    ),
    retrieve=extend_schema(
        summary="Get any customer's credit note",
        responses=CREDIT_NOTE_RESPONSE,
        examples=CREDIT_NOTE_EXAMPLES,
        tags=["Staff"],
    ),
)


# AdminBalanceTransactionViewSet
ADMIN_BALANCE_TRANSACTION_DOCS = dict(
    list=extend_schema(
        summary="List a customer's balance transactions",
        parameters=[CUSTOMER_ID],
        examples=BALANCE_TRANSACTION_LIST_EXAMPLES,
        tags=["Staff"],
    ),
    retrieve=extend_schema(
        summary="Get a customer's balance transaction",
        parameters=[CUSTOMER_ID],
        responses=BALANCE_TRANSACTION_RESPONSE,
        examples=BALANCE_TRANSACTION_EXAMPLES,
        tags=["Staff"],
    ),
    create=extend_schema(
        summary="Adjust a customer's balance",
        description="Adds credit (a positive `amount`) or takes it away (negative), as an "
        "`adjustment` entry of the ledger with its description. The first entry of an "
        "account without invoices fixes its billing currency.",
        parameters=[CUSTOMER_ID],
        request=BalanceTransactionCreateSerializer,
        responses={201: BALANCE_TRANSACTION_RESPONSE, 409: BALANCE_CONFLICT},
        examples=[
            OpenApiExample(
                "Goodwill credit",
                value={
                    "amount": 2000,
                    "currency": "EUR",
                    "description": "Goodwill credit for the outage of Dec 2",
                },
                request_only=True,
            ),
            *BALANCE_TRANSACTION_EXAMPLES,
        ],
        tags=["Staff"],
    ),
)


# AdminBillingProfileViewSet
ADMIN_BILLING_PROFILE_DOCS = dict(
    retrieve=extend_schema(
        summary="Get a customer's billing profile",
        parameters=[CUSTOMER_ID],
        responses=BILLING_PROFILE_RESPONSE,
        examples=BILLING_PROFILE_EXAMPLES,
        tags=["Staff"],
    ),
    partial_update=extend_schema(
        summary="Change a customer's billing profile",
        description=f"{PROFILE_CHANGE} Staff may also set `tax_exempt` and "
        "`payment_gateways` (the account's own gateways in collection order; `[]`: the "
        "service's default). A gateway this service does not have is 400 `validation_failed`.",
        parameters=[CUSTOMER_ID],
        request=StaffBillingProfileUpdateSerializer,
        responses=BILLING_PROFILE_RESPONSE,
        examples=[
            OpenApiExample("Tax exempt", value={"tax_exempt": True}, request_only=True),
            OpenApiExample(
                "Bank transfer only",
                value={"payment_gateways": ["bank_transfer"]},
                request_only=True,
            ),
            *BILLING_PROFILE_EXAMPLES,
        ],
        tags=["Staff"],
    ),
)


SUBSCRIPTION_TRANSITION_CONFLICT = error_doc(
    409,
    "invalid_state",
    "`invalid_state` (details.status, details.allowed_statuses) when the subscription's status "
    "does not allow this (a canceled one, or an order not yet paid).",
    "Cannot change the plan of this subscription: the subscription is canceled.",
    {"status": "canceled", "allowed_statuses": []},
)
ORDER_CONFLICT = error_doc(
    409,
    "conflict",
    "`conflict` (details.currency): the account is billed in another currency (fixed by its "
    "first invoice).",
    "This account is billed in EUR; it cannot be billed in USD.",
    {"currency": "EUR"},
)
CHANGE_CONFLICT = error_doc(
    409,
    "invalid_state",
    "`invalid_state` (details.status, details.allowed_statuses) when the subscription's status "
    "does not allow a change; `action_in_progress` (details.action_id) while its server or bot "
    "runs another action (try again when it is done).",
    "Cannot change the plan of this subscription: the subscription is canceled.",
    {"status": "canceled", "allowed_statuses": []},
)
RESUME_CONFLICT = error_doc(
    409,
    "conflict",
    "`conflict` (details.status): the subscription is not set to cancel at its period's end.",
    "This subscription is not set to cancel.",
    {"status": "active"},
)
ORDER_FIELD_ERRORS = (
    "Refusals are 400 `validation_failed` naming the field: `price` (`invalid_choice`: not on "
    "sale), `order.name`, `order.region` / `order.game` / `order.runtime` (`invalid_choice`, or "
    "`not_in_plan` when the plan does not offer it), `order.variables.*`, `order.token`, "
    "`promotion_code` / `coupon` (`coupon_not_found`, `coupon_expired`, `coupon_used_up`, "
    "`coupon_not_applicable`, `currency_mismatch`; `coupon_code_required`: a coupon id is taken "
    "only for a coupon staff made `directly_redeemable`, any other is redeemed through one of "
    "its promotion codes, whose limits, expiry and deactivation always apply)."
)
SUBSCRIPTION_STATES = (
    "States: `incomplete` (ordered, first invoice unpaid), `trialing`, `active`, `past_due` "
    "(a renewal is overdue), `unpaid` (suspended for it), `canceled`."
)

# An order as the examples of ordering and of its preview send it.
SERVER_ORDER_EXAMPLE = {
    "price": "price_8Lk2Tq4Wn7Xc5Rb9Mv3HdPz1",
    "order": {
        "name": "Survival SMP",
        "region": "eu-central",
        "game": "minecraft-java",
        "variables": {"EULA": "true"},
    },
    "promotion_code": "WELCOME10",
}

# SubscriptionViewSet
SUBSCRIPTION_DOCS = dict(
    list=extend_schema(
        summary="List subscriptions",
        description=f"The account's plans, newest first. {SUBSCRIPTION_STATES} {LIST_NOTE} "
        "`search` finds a server or bot name.",
        examples=SUBSCRIPTION_LIST_EXAMPLES,
        tags=["Subscriptions"],
    ),
    retrieve=extend_schema(
        summary="Get a subscription",
        responses=SUBSCRIPTION_RESPONSE,
        examples=SUBSCRIPTION_EXAMPLES,
        tags=["Subscriptions"],
    ),
    create=extend_schema(
        summary="Order a plan",
        description="Creates the subscription and its first invoice (the first period, the "
        "setup fee, the coupon's discount and the tax), finalized at once. The account's "
        "credit is applied at once (partly if it does not cover it), then a saved card is "
        "charged for the rest. Paid (or nothing owed: a trial, a free price), the "
        "subscription is `active` (or `trialing`): the server or bot is created with the plan's "
        "resources, as `POST /v1/servers` would (follow it with `server`/`bot`). Otherwise it "
        "stays `incomplete` until the invoice is paid (`POST /v1/invoices/{id}/pay`, or a "
        "transfer staff mark paid); an order unpaid at its due date lapses. The order is "
        "checked before anything is written, so a refused one leaves nothing behind. "
        f"{ORDER_FIELD_ERRORS} Over the account's quota: 422 `quota_exceeded`.",
        request=SubscriptionOrderSerializer,
        responses={201: SubscriptionOrderResultSerializer, 409: ORDER_CONFLICT},
        examples=[
            OpenApiExample(
                "A Minecraft server",
                value=SERVER_ORDER_EXAMPLE,
                request_only=True,
            ),
            OpenApiExample(
                "A Discord bot",
                value={
                    "price": "price_3HdPz1Lk8Tq4Wn7Xc5Rb9Mv",
                    "order": {
                        "name": "Moderation bot",
                        "region": "eu-central",
                        "runtime": "python-3.13",
                        "start_command": "python bot.py",
                        "token": "<the bot's Discord token>",
                    },
                },
                request_only=True,
            ),
            *ORDER_EXAMPLES,
        ],
        tags=["Subscriptions"],
    ),
    preview=extend_schema(
        summary="Preview an order",
        description="What `POST /v1/subscriptions` with the same body would invoice, computed "
        "exactly as the order will (nothing is written, no code is redeemed): the first "
        "invoice's lines (the first period, or a trial's free line, and the setup fee), the "
        "coupon's discount, the tax of the buyer's country and VAT status (`tax_rate`: a "
        "reverse-charge business pays none), the `total`, what the account's credit pays of it "
        "at once (`credit_applied`) and what is left `due_today`; and the `renewal`: the next "
        "period's invoice, due when it starts, discounted only while the coupon lasts. Needs "
        "`billing:read`, as the plan change's preview: it changes nothing. Refused exactly as "
        f"the order would be: {ORDER_FIELD_ERRORS} Over the account's quota: 422 "
        "`quota_exceeded`.",
        request=SubscriptionOrderSerializer,
        responses={200: ORDER_PREVIEW_RESPONSE, 409: ORDER_CONFLICT},
        examples=[
            OpenApiExample(
                "A Minecraft server with a code",
                value=SERVER_ORDER_EXAMPLE,
                request_only=True,
            ),
            *ORDER_PREVIEW_EXAMPLES,
        ],
        tags=["Subscriptions"],
    ),
    preview_change=extend_schema(
        summary="Preview a plan change",
        description="What `POST /v1/subscriptions/{id}/change` to `price` would charge or "
        "credit now, computed exactly as the change will (nothing is written): credit for the "
        "unused part of the old price and a charge for the rest of the period on the new one, "
        "to the second, each line's amount rounded half away from zero in minor units, then "
        "the coupon's discount and the tax. A trial prorates nothing. The same price is 400 "
        "`unchanged`; another kind of plan or currency is 400 (`invalid_choice`, "
        "`currency_mismatch`); a plan that does not run the server's region or game is 400 "
        "`not_in_plan`.",
        request=SubscriptionPriceSerializer,
        responses={200: PLAN_CHANGE_RESPONSE, 409: SUBSCRIPTION_TRANSITION_CONFLICT},
        examples=[
            OpenApiExample(
                "To a bigger plan",
                value={"price": "price_2Wn7Xc5Rb9Mv3HdPz1Lk8Tq4"},
                request_only=True,
            ),
            *PLAN_CHANGE_EXAMPLES,
        ],
        tags=["Subscriptions"],
    ),
    change=extend_schema(
        summary="Change plan",
        description="Moves the subscription to `price` now, as the preview showed: a positive "
        "total is invoiced (`subscription_update`) and collected at once (the credit first, "
        "partly if need be, then a saved card); a negative one (unused time) first settles the "
        "subscription's invoices still owed for the period, and only the rest is added to the "
        "balance: credit covers only what was paid. The server or bot gets the new plan's "
        "resources and bounds (`plan_limit` beyond them). A renewal already issued at the old "
        "price and unpaid is issued again at the new one. Errors as the preview's.",
        request=SubscriptionPriceSerializer,
        responses={200: SubscriptionChangeResultSerializer, 409: CHANGE_CONFLICT},
        examples=[
            OpenApiExample(
                "To a bigger plan",
                value={"price": "price_2Wn7Xc5Rb9Mv3HdPz1Lk8Tq4"},
                request_only=True,
            ),
            *CHANGE_EXAMPLES,
        ],
        tags=["Subscriptions"],
    ),
    cancel=extend_schema(
        summary="Cancel a subscription",
        description="`at_period_end: true` (the default): the plan runs until the period ends, "
        "then the server or bot is deleted; `POST .../resume` undoes it until then. "
        "`at_period_end: false`: now: the server or bot is deleted and unpaid invoices are "
        "voided; paid time is not refunded (staff can issue a credit note). An order not yet "
        "paid is canceled now either way. A canceled subscription is 409 `invalid_state`.",
        request=SubscriptionCancelSerializer,
        responses={200: SUBSCRIPTION_RESPONSE, 409: SUBSCRIPTION_TRANSITION_CONFLICT},
        examples=[
            OpenApiExample("At the period's end", value={"at_period_end": True}, request_only=True),
            OpenApiExample("Now", value={"at_period_end": False}, request_only=True),
            *CANCELED_EXAMPLES,
        ],
        tags=["Subscriptions"],
    ),
    resume=extend_schema(
        summary="Resume a subscription",
        description="Undoes a cancellation at the period's end, before the period ends. No body.",
        request=None,
        responses={200: SUBSCRIPTION_RESPONSE, 409: RESUME_CONFLICT},
        examples=SUBSCRIPTION_EXAMPLES,
        tags=["Subscriptions"],
    ),
)


# CouponValidationViewSet
COUPON_VALIDATION_DOCS = dict(
    create=extend_schema(
        summary="Check a promotion code",
        description="Whether a `promotion_code` the customer typed (or the `coupon` id of a "
        "coupon staff made `directly_redeemable`) applies to an order of `price` now, without "
        "redeeming it: 200 with the coupon (and the code), or 400 `validation_failed` on the "
        "field with the reason (`coupon_not_found`, `coupon_expired`, `coupon_used_up`, "
        "`coupon_not_applicable`, `currency_mismatch`, `coupon_code_required`: this coupon is "
        "redeemed only through a promotion code). The answer shows the coupon's id: it orders "
        "nothing by itself unless the coupon is `directly_redeemable`. Give exactly one of "
        "`promotion_code` and `coupon`.",
        request=CouponValidateSerializer,
        responses={200: COUPON_VALIDATION_RESPONSE},
        examples=[
            OpenApiExample(
                "A code typed at checkout",
                value={"price": "price_8Lk2Tq4Wn7Xc5Rb9Mv3HdPz1", "promotion_code": "welcome10"},
                request_only=True,
            ),
            *COUPON_VALIDATION_EXAMPLES,
        ],
        tags=["Subscriptions"],
    ),
)


# AdminSubscriptionViewSet
ADMIN_SUBSCRIPTION_DOCS = dict(
    list=extend_schema(
        summary="List every customer's subscriptions",
        description="Staff keys with `admin:read`: all subscriptions, newest first; `account` "
        f"narrows them to one customer. {LIST_NOTE}",
        examples=SUBSCRIPTION_LIST_EXAMPLES,
        tags=["Staff"],
    ),
    retrieve=extend_schema(
        summary="Get any customer's subscription",
        responses=SUBSCRIPTION_RESPONSE,
        examples=SUBSCRIPTION_EXAMPLES,
        tags=["Staff"],
    ),
    cancel=extend_schema(
        summary="Cancel any customer's subscription",
        description="As the customer's own cancel: at the period's end (the default) or now.",
        request=SubscriptionCancelSerializer,
        responses={200: SUBSCRIPTION_RESPONSE, 409: SUBSCRIPTION_TRANSITION_CONFLICT},
        examples=[
            OpenApiExample("Now", value={"at_period_end": False}, request_only=True),
            *CANCELED_EXAMPLES,
        ],
        tags=["Staff"],
    ),
)


CLOCK_CONFLICT = error_doc(
    409,
    "conflict",
    "`conflict`: the account was billed on the real clock (it has invoices and no test clock).",
    "This account has been billed on the real clock; a test clock starts only on an account "
    "without invoices (a demo account).",
)

# AdminBillingClockViewSet
ADMIN_BILLING_CLOCK_DOCS = dict(
    retrieve=extend_schema(
        summary="Get a customer's test clock",
        description="The billing time of a demo account on a test clock; 404 when it has none.",
        parameters=[CUSTOMER_ID],
        responses=BILLING_CLOCK_RESPONSE,
        examples=BILLING_CLOCK_EXAMPLES,
        tags=["Staff"],
    ),
    create=extend_schema(
        summary="Start or move a customer's test clock",
        description="For demos and trials of the billing engine, as Stripe's test clocks: the "
        "first call starts the account's clock at `to` (only on an account never billed: 409 "
        "`conflict` otherwise); later calls move it forward to `to`, running the billing job "
        "for that account at every step on the way (an hour when one of its plans bills "
        "hourly, else a day; at most 1,000 steps per call, else 400 `too_far`), so renewals, "
        "trial ends, dunning, suspension and termination happen in order. Going back is 400 "
        "`out_of_range`. Servers and bots are created and suspended by the worker as usual.",
        parameters=[CUSTOMER_ID],
        request=BillingClockAdvanceSerializer,
        responses={200: BILLING_CLOCK_RESPONSE, 409: CLOCK_CONFLICT},
        examples=[
            OpenApiExample("A month on", value={"to": "2027-02-01T09:00:00Z"}, request_only=True),
            *BILLING_CLOCK_EXAMPLES,
        ],
        tags=["Staff"],
    ),
)


# --- Staff: the catalogue ---------------------------------------------------------------------

STAFF_PRODUCT_RESPONSE = envelope("product", ProductSerializer(), name="StaffProductEnvelope")
PRICE_RESPONSE = envelope("price", PriceSerializer())
TAX_RATE_RESPONSE = envelope("tax_rate", TaxRateSerializer())
COUPON_RESPONSE = envelope("coupon", CouponSerializer())
PROMOTION_CODE_RESPONSE = envelope("promotion_code", PromotionCodeSerializer())


NO_SUCH_COUPON = error_doc(
    404, "not_found", "`not_found`: no coupon with the id in `coupon`.", "No coupon with this id."
)
FIELD_RULES = "A value the catalogue refuses is 400 `validation_failed` naming the field."
CATALOGUE_TAGS = ["Staff: catalogue"]


def _catalogue_doc(summary: str, description: str = "", **kwargs):
    return extend_schema(summary=summary, description=description, tags=CATALOGUE_TAGS, **kwargs)


ADMIN_PRODUCT_DOCS = dict(
    list=_catalogue_doc(
        "List every product",
        "The whole catalogue, archived products too (`active=false`), newest first, each with "
        "every price (archived ones with `active: false`).",
        examples=[OpenApiExample("A plan", value=PRODUCT_EXAMPLE, response_only=True)],
    ),
    retrieve=_catalogue_doc(
        "Get any product", responses=STAFF_PRODUCT_RESPONSE, examples=STAFF_PRODUCT_EXAMPLES
    ),
    create=_catalogue_doc(
        "Create a product",
        f"A plan customers can order once it has a price. {FIELD_RULES}",
        request=ProductCreateSerializer,
        responses={201: STAFF_PRODUCT_RESPONSE},
        examples=[
            OpenApiExample(
                "Minecraft 4 GB",
                value={
                    "name": "Minecraft 4 GB",
                    "kind": "server",
                    "resources": {"memory_mb": 4096, "cpu_percent": 200, "disk_mb": 20480},
                    "games": ["minecraft-java"],
                },
                request_only=True,
            ),
            *STAFF_PRODUCT_EXAMPLES,
        ],
    ),
    partial_update=_catalogue_doc(
        "Change a product",
        "Any of the fields. Servers and bots already provisioned keep their resources. The "
        f"`kind` of a product with subscriptions cannot change (409 `conflict`). {FIELD_RULES}",
        request=ProductUpdateSerializer,
        responses={200: STAFF_PRODUCT_RESPONSE, 409: CONFLICT},
        examples=[
            OpenApiExample("More disk", value={"resources": {"disk_mb": 30720}}, request_only=True),
            *STAFF_PRODUCT_EXAMPLES,
        ],
    ),
    archive=_catalogue_doc(
        "Archive a product",
        "Takes the plan off sale; its subscriptions go on. No body.",
        request=None,
        responses=STAFF_PRODUCT_RESPONSE,
        examples=STAFF_PRODUCT_EXAMPLES,
    ),
    prices=_catalogue_doc(
        "Add a price to a product",
        f"A price never changes once created: add a new one and archive the old. {FIELD_RULES}",
        request=PriceCreateSerializer,
        responses={201: PRICE_RESPONSE},
        examples=[
            OpenApiExample(
                "12 EUR a month",
                value={"currency": "EUR", "unit_amount": 1200, "interval": "month"},
                request_only=True,
            ),
            *PRICE_EXAMPLES,
        ],
    ),
)
ADMIN_PRICE_DOCS = dict(
    archive=_catalogue_doc(
        "Archive a price",
        "Stops new orders at this price; subscriptions on it renew at it. No body.",
        request=None,
        responses=PRICE_RESPONSE,
        examples=PRICE_EXAMPLES,
    ),
)
ADMIN_TAX_RATE_DOCS = dict(
    list=_catalogue_doc(
        "List tax rates", "By country and region.", examples=TAX_RATE_LIST_EXAMPLES
    ),
    create=_catalogue_doc(
        "Create a tax rate",
        "One active rate per country and region (409 `conflict`: archive the old one first). "
        f"{FIELD_RULES}",
        request=TaxRateCreateSerializer,
        responses={201: TAX_RATE_RESPONSE, 409: CONFLICT},
        examples=[
            OpenApiExample(
                "New York sales tax",
                value={
                    "country": "US",
                    "region": "NY",
                    "percentage": "8.875",
                    "display_name": "Sales tax",
                },
                request_only=True,
            ),
            *TAX_RATE_EXAMPLES,
        ],
    ),
    archive=_catalogue_doc(
        "Archive a tax rate",
        "Invoices finalized from now on no longer use it. No body.",
        request=None,
        responses=TAX_RATE_RESPONSE,
        examples=TAX_RATE_EXAMPLES,
    ),
)
ADMIN_COUPON_DOCS = dict(
    list=_catalogue_doc("List coupons", examples=COUPON_LIST_EXAMPLES),
    retrieve=_catalogue_doc("Get a coupon", responses=COUPON_RESPONSE, examples=COUPON_EXAMPLES),
    create=_catalogue_doc(
        "Create a coupon",
        "`percent_off` or `amount_off` with `currency`; `duration` `once`, `repeating` (with "
        f"`duration_in_months`) or `forever`. {FIELD_RULES}",
        request=CouponCreateSerializer,
        responses={201: COUPON_RESPONSE},
        examples=[
            OpenApiExample(
                "10 % for three months",
                value={
                    "name": "Welcome 10 %",
                    "percent_off": "10",
                    "duration": "repeating",
                    "duration_in_months": 3,
                    "max_redemptions": 500,
                },
                request_only=True,
            ),
            OpenApiExample(
                "A partner's coupon, ordered by its id",
                value={
                    "name": "Partner 20 %",
                    "percent_off": "20",
                    "duration": "once",
                    "directly_redeemable": True,
                },
                request_only=True,
            ),
            *COUPON_EXAMPLES,
        ],
    ),
    partial_update=_catalogue_doc(
        "Change whether a coupon is redeemed by its id",
        "`directly_redeemable` is the one thing a coupon changes: `true` lets customers order "
        "(and check) with its id; `false` leaves only its promotion codes, and an order "
        "checked before the change is refused when it is counted (400 `validation_failed`, "
        f"`coupon_code_required`). What it discounts stays discounted. {FIELD_RULES}",
        request=CouponUpdateSerializer,
        responses=COUPON_RESPONSE,
        examples=[
            OpenApiExample(
                "Ordered by its id", value={"directly_redeemable": True}, request_only=True
            ),
            OpenApiExample(
                "Only through its codes", value={"directly_redeemable": False}, request_only=True
            ),
            *COUPON_EXAMPLES,
        ],
    ),
    archive=_catalogue_doc(
        "Archive a coupon",
        "No new redemptions, by it or its codes; what it discounts stays discounted. No body.",
        request=None,
        responses=COUPON_RESPONSE,
        examples=COUPON_EXAMPLES,
    ),
)
ADMIN_PROMOTION_CODE_DOCS = dict(
    list=_catalogue_doc("List promotion codes", examples=PROMOTION_CODE_LIST_EXAMPLES),
    create=_catalogue_doc(
        "Create a promotion code",
        "A code customers type for an active coupon; stored upper-case, unique in any case "
        f"(409 `conflict`). {FIELD_RULES}",
        request=PromotionCodeCreateSerializer,
        responses={201: PROMOTION_CODE_RESPONSE, 404: NO_SUCH_COUPON, 409: CONFLICT},
        examples=[
            OpenApiExample(
                "WELCOME10",
                value={"coupon": "cpn_9Nb1Hd6Fy5Rk8Tz2Qm7Lx4Wc", "code": "welcome10"},
                request_only=True,
            ),
            *PROMOTION_CODE_EXAMPLES,
        ],
    ),
    deactivate=_catalogue_doc(
        "Deactivate a promotion code",
        "No body.",
        request=None,
        responses=PROMOTION_CODE_RESPONSE,
        examples=PROMOTION_CODE_EXAMPLES,
    ),
)
