"""The billing API: the catalogue, invoices and their PDFs, credit notes, the credit ledger and
balance, payments, the billing profile; and the staff's billing operations, the catalogue's
among them (products and prices, tax rates, coupons and promotion codes under ``/v1/admin``).

Views parse the body, call one service of ``billing.services`` (or read through
``billing.selectors``) and serialize the answer; the rules (which transitions an invoice
allows, how much can be credited, what a VAT id must look like) live in the services. Nothing
of the catalogue is deleted: products, prices, tax rates and coupons are archived, as invoices
and subscriptions keep pointing at them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema_view
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.actors import Actor
from accounts.models import Account
from billing.api.docs import (
    ADMIN_BALANCE_TRANSACTION_DOCS,
    ADMIN_BILLING_CLOCK_DOCS,
    ADMIN_BILLING_PROFILE_DOCS,
    ADMIN_COUPON_DOCS,
    ADMIN_CREDIT_NOTE_DOCS,
    ADMIN_INVOICE_DOCS,
    ADMIN_PRICE_DOCS,
    ADMIN_PRODUCT_DOCS,
    ADMIN_PROMOTION_CODE_DOCS,
    ADMIN_SUBSCRIPTION_DOCS,
    ADMIN_TAX_RATE_DOCS,
    BALANCE_DOCS,
    BALANCE_TRANSACTION_DOCS,
    BILLING_PROFILE_DOCS,
    COUPON_VALIDATION_DOCS,
    CREDIT_NOTE_DOCS,
    INVOICE_DOCS,
    PAYMENT_DOCS,
    PRODUCT_DOCS,
    SUBSCRIPTION_DOCS,
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
    SubscriptionOrderSerializer,
    SubscriptionPriceSerializer,
    SubscriptionSerializer,
)
from billing.api.serializers.tax_rates import TaxRateCreateSerializer, TaxRateSerializer
from billing.clock import billing_now
from billing.filters import (
    AdminInvoiceFilter,
    AdminProductFilter,
    AdminSubscriptionFilter,
    BalanceTransactionFilter,
    CouponFilter,
    CreditNoteFilter,
    InvoiceFilter,
    PaymentFilter,
    ProductFilter,
    PromotionCodeFilter,
    SubscriptionFilter,
    TaxRateFilter,
)
from billing.models import (
    BalanceTransaction,
    BillingClock,
    CreditNote,
    Invoice,
    Payment,
    Price,
    Subscription,
)
from billing.selectors import (
    balance_transactions_of_account,
    billing_profile_of,
    coupons_all,
    credit_note_document,
    credit_notes_all,
    credit_notes_of_account,
    invoice_document,
    invoices_all,
    invoices_of_account,
    payments_of_account,
    products_all,
    products_for_sale,
    promotion_codes_all,
    subscriptions_all,
    subscriptions_of_account,
    tax_rates_all,
)
from billing.services import (
    balance_change,
    balance_of,
    credit_note_create,
    invoice_mark_paid,
    invoice_mark_uncollectible,
    invoice_pay_with_credit,
    invoice_void,
)
from billing.services.catalogue import (
    coupon_archive,
    coupon_create,
    coupon_update,
    price_archive,
    price_create,
    product_archive,
    product_create,
    product_update,
    promotion_code_create,
    promotion_code_deactivate,
    tax_rate_archive,
    tax_rate_create,
)
from billing.services.discounts import coupon_check
from billing.services.gateways import card_gateway
from billing.services.job.renewals import billing_clock_walk
from billing.services.profile import BillingProfileChanges, billing_profile_update
from billing.services.subscriptions import (
    price_orderable,
    subscription_cancel,
    subscription_change,
    subscription_change_preview,
    subscription_order,
    subscription_order_preview,
    subscription_resume,
)
from hosting.api.serializers import EmptyBodySerializer
from hosting.api.views import (
    AccountListMixin,
    ApiViewSet,
    CallerScopedMixin,
    EnvelopeListMixin,
    EnvelopeRetrieveMixin,
    created,
    validated,
)
from hosting.errors import NotFound

if TYPE_CHECKING:
    from billing.pdf import DocumentSnapshot

READ, WRITE = ["billing:read"], ["billing:write"]
STAFF_READ, STAFF_WRITE = ["admin:read"], ["admin:write"]
PDF_OCTETS = "application/octet-stream"


def _pdf_response(request, document: DocumentSnapshot) -> HttpResponse:
    """The document's PDF as a download named after its number: ``application/pdf``, or the
    same bytes as ``application/octet-stream`` for a client that accepts that and not PDF (the
    two media types the schema documents; generated clients read the second as bytes)."""
    # WeasyPrint takes ~2 s to import: loaded on the first download, not with the URLconf
    # (the dashboard's download view does the same).
    from billing.pdf import render_document_pdf

    accepted = request.headers.get("Accept", "")
    content_type = (
        PDF_OCTETS
        if PDF_OCTETS in accepted and "application/pdf" not in accepted
        else "application/pdf"
    )
    response = HttpResponse(render_document_pdf(document), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{document["number"]}.pdf"'
    return response


def _pay_answer(invoice: Invoice, payment, next_action: dict | None) -> Response:
    """An invoice someone paid (or started paying): the invoice as it is now, the payment, and
    what the customer must do for the bank, if anything."""
    return Response(
        {
            "invoice": InvoiceSerializer(invoices_all().get(pk=invoice.pk)).data,
            "payment": PaymentSerializer(payment).data if payment is not None else None,
            "next_action": next_action,
        }
    )


def _invoice_answer(invoice: Invoice) -> Response:
    """An invoice a service changed, read again with its lines."""
    return Response({"invoice": InvoiceSerializer(invoices_all().get(pk=invoice.pk)).data})


# --- The catalogue ----------------------------------------------------------------------------


@extend_schema_view(**PRODUCT_DOCS)
class ProductViewSet(EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    list_key = "products"
    resource_key = "product"
    serializer_class = ProductSerializer
    filterset_classes = {"list": ProductFilter}
    required_scopes = {"list": READ, "retrieve": READ}

    def get_queryset(self):
        return products_for_sale()


@extend_schema_view(**COUPON_VALIDATION_DOCS)
class CouponValidationViewSet(ApiViewSet):
    serializer_class = CouponValidationSerializer
    required_scopes = {"create": READ}

    def create(self, request):
        body = validated(CouponValidateSerializer, request)
        price = price_orderable(body["price"])
        coupon, code = coupon_check(
            price=price,
            at=billing_now(request.auth.account),
            promotion_code=body.get("promotion_code"),
            coupon_id=body.get("coupon"),
        )
        answer = {"coupon": coupon, "promotion_code": code}
        return Response({"coupon_validation": CouponValidationSerializer(answer).data})


# --- The caller's account ---------------------------------------------------------------------


def _subscription_answer(subscription: Subscription, invoice: Invoice | None, status=200):
    data = {
        "subscription": SubscriptionSerializer(subscription).data,
        "invoice": None
        if invoice is None
        else InvoiceSerializer(invoices_all().get(pk=invoice.pk)).data,
    }
    return Response(data, status=status)


@extend_schema_view(**SUBSCRIPTION_DOCS)
class SubscriptionViewSet(CallerScopedMixin, EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    model = Subscription
    list_key = "subscriptions"
    resource_key = "subscription"
    serializer_class = SubscriptionSerializer
    filterset_classes = {"list": SubscriptionFilter}
    required_scopes = {
        "list": READ,
        "retrieve": READ,
        "create": WRITE,
        "preview": READ,
        "preview_change": READ,
        "change": WRITE,
        "cancel": WRITE,
        "resume": WRITE,
    }

    def caller_queryset(self, principal):
        return subscriptions_of_account(account_id=principal.account.id)

    def create(self, request):
        body = validated(SubscriptionOrderSerializer, request)
        subscription, invoice = subscription_order(
            account=request.auth.account,
            price=body["price"],
            order=dict(body["order"]),
            quantity=body["quantity"],
            promotion_code=body.get("promotion_code"),
            coupon=body.get("coupon"),
            actor=Actor.from_request(request),
        )
        answer = _subscription_answer(subscription, invoice)
        return created(request, answer.data, f"/v1/subscriptions/{subscription.id}")

    @action(detail=False, methods=["post"])
    def preview(self, request):
        body = validated(SubscriptionOrderSerializer, request)
        preview = subscription_order_preview(
            account=request.auth.account,
            price=body["price"],
            order=dict(body["order"]),
            quantity=body["quantity"],
            promotion_code=body.get("promotion_code"),
            coupon=body.get("coupon"),
        )
        return Response({"order_preview": OrderPreviewSerializer(preview).data})

    @action(detail=True, methods=["post"], url_path="preview-change")
    def preview_change(self, request, pk: str):
        body = validated(SubscriptionPriceSerializer, request)
        change = subscription_change_preview(subscription=self.get_object(), price=body["price"])
        return Response({"plan_change": PlanChangeSerializer(change).data})

    @action(detail=True, methods=["post"])
    def change(self, request, pk: str):
        body = validated(SubscriptionPriceSerializer, request)
        subscription, invoice = subscription_change(
            subscription=self.get_object(), price=body["price"], actor=Actor.from_request(request)
        )
        return _subscription_answer(subscription, invoice)

    @action(detail=True, methods=["post"])
    def cancel(self, request, pk: str):
        body = validated(SubscriptionCancelSerializer, request)
        subscription = subscription_cancel(
            subscription=self.get_object(),
            at_period_end=body["at_period_end"],
            actor=Actor.from_request(request),
        )
        return Response({"subscription": SubscriptionSerializer(subscription).data})

    @action(detail=True, methods=["post"])
    def resume(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        subscription = subscription_resume(
            subscription=self.get_object(), actor=Actor.from_request(request)
        )
        return Response({"subscription": SubscriptionSerializer(subscription).data})


@extend_schema_view(**INVOICE_DOCS)
class InvoiceViewSet(
    AccountListMixin, CallerScopedMixin, EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet
):
    model = Invoice
    list_key = "invoices"
    resource_key = "invoice"
    serializer_class = InvoiceSerializer
    filterset_classes = {"list": InvoiceFilter}
    required_scopes = {"list": READ, "retrieve": READ, "pdf": READ, "pay": WRITE}

    account_rows = staticmethod(invoices_of_account)
    # The list's answer (invoice_representation) reads an invoice's fields and lines only: its
    # rows are plain records, not model instances with a related manager each (issue 35).
    list_records = True
    speculative_list = True  # answered while the key's lookup is on its way (hosting.api.views)

    @action(detail=True, methods=["get"])
    def pdf(self, request, pk: str):
        return _pdf_response(request, invoice_document(self.get_object()))

    @action(detail=True, methods=["post"])
    def pay(self, request, pk: str):
        body = validated(InvoicePaySerializer, request)
        invoice, actor = self.get_object(), Actor.from_request(request)
        if body["source"] == "credit":
            invoice = invoice_pay_with_credit(invoice=invoice, actor=actor)
            payment = invoice.payments.filter(gateway="credit").order_by("-created_at").first()
            return _pay_answer(invoice, payment, None)
        card = card_gateway(account=invoice.account)
        return_url = body.get("return_url") or (
            f"{settings.SITE_URL}/billing/invoices/{invoice.id}/card-return"
        )
        started = card.pay_now(
            invoice, payment_method=body.get("payment_method"), return_url=return_url, actor=actor
        )
        next_action = None
        if started.redirect_url:
            next_action = {
                "type": "redirect_to_url",
                "url": started.redirect_url,
                "client_secret": None,
            }
        elif started.client_secret:
            next_action = {
                "type": "use_stripe_sdk",
                "url": None,
                "client_secret": started.client_secret,
            }
        return _pay_answer(invoice, started.payment, next_action)


@extend_schema_view(**CREDIT_NOTE_DOCS)
class CreditNoteViewSet(CallerScopedMixin, EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    model = CreditNote
    list_key = "credit_notes"
    resource_key = "credit_note"
    serializer_class = CreditNoteSerializer
    filterset_classes = {"list": CreditNoteFilter}
    required_scopes = {"list": READ, "retrieve": READ, "pdf": READ}

    def caller_queryset(self, principal):
        return credit_notes_of_account(account_id=principal.account.id)

    @action(detail=True, methods=["get"])
    def pdf(self, request, pk: str):
        return _pdf_response(request, credit_note_document(self.get_object()))


@extend_schema_view(**BALANCE_TRANSACTION_DOCS)
class BalanceTransactionViewSet(
    CallerScopedMixin, EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet
):
    model = BalanceTransaction
    list_key = "balance_transactions"
    resource_key = "balance_transaction"
    serializer_class = BalanceTransactionSerializer
    filterset_classes = {"list": BalanceTransactionFilter}
    required_scopes = {"list": READ, "retrieve": READ}

    def caller_queryset(self, principal):
        return balance_transactions_of_account(account_id=principal.account.id)


@extend_schema_view(**PAYMENT_DOCS)
class PaymentViewSet(CallerScopedMixin, EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    model = Payment
    list_key = "payments"
    resource_key = "payment"
    serializer_class = PaymentSerializer
    filterset_classes = {"list": PaymentFilter}
    required_scopes = {"list": READ, "retrieve": READ}

    def caller_queryset(self, principal):
        return payments_of_account(account_id=principal.account.id)


def _balance(account: Account) -> dict:
    return {
        "available": balance_of(account),
        "currency": billing_profile_of(account).currency or None,
    }


@extend_schema_view(**BALANCE_DOCS)
class BalanceViewSet(ApiViewSet):
    serializer_class = BalanceSerializer
    required_scopes = {"retrieve": READ}

    def retrieve(self, request):
        return Response({"balance": BalanceSerializer(_balance(request.auth.account)).data})


def _profile_answer(account: Account) -> Response:
    profile = billing_profile_of(account)
    return Response({"billing_profile": BillingProfileSerializer(profile).data})


@extend_schema_view(**BILLING_PROFILE_DOCS)
class BillingProfileViewSet(ApiViewSet):
    serializer_class = BillingProfileSerializer
    required_scopes = {"retrieve": READ, "partial_update": WRITE}

    def retrieve(self, request):
        return _profile_answer(request.auth.account)

    def partial_update(self, request):
        account = request.auth.account
        body = validated(BillingProfileUpdateSerializer, request)
        if changes := BillingProfileChanges.of(body):
            billing_profile_update(
                account=account, changes=changes, actor=Actor.from_request(request)
            )
        return _profile_answer(account)


# --- Staff ------------------------------------------------------------------------------------


@extend_schema_view(**ADMIN_INVOICE_DOCS)
class AdminInvoiceViewSet(EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    """Every account's invoices, and what only the hosting company does to them."""

    list_key = "invoices"
    resource_key = "invoice"
    serializer_class = InvoiceSerializer
    filterset_classes = {"list": AdminInvoiceFilter}
    required_scopes = {
        "list": STAFF_READ,
        "retrieve": STAFF_READ,
        "pdf": STAFF_READ,
        "mark_paid": STAFF_WRITE,
        "void": STAFF_WRITE,
        "mark_uncollectible": STAFF_WRITE,
    }

    def get_queryset(self):
        return invoices_all()

    @action(detail=True, methods=["get"])
    def pdf(self, request, pk: str):
        return _pdf_response(request, invoice_document(self.get_object()))

    @action(detail=True, methods=["post"], url_path="mark-paid")
    def mark_paid(self, request, pk: str):
        body = validated(InvoiceMarkPaidSerializer, request)
        invoice = invoice_mark_paid(
            invoice=self.get_object(),
            reference=body["reference"],
            actor=Actor.from_request(request),
        )
        return _invoice_answer(invoice)

    @action(detail=True, methods=["post"])
    def void(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        invoice = invoice_void(invoice=self.get_object(), actor=Actor.from_request(request))
        return _invoice_answer(invoice)

    @action(detail=True, methods=["post"], url_path="mark-uncollectible")
    def mark_uncollectible(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        invoice = invoice_mark_uncollectible(
            invoice=self.get_object(), actor=Actor.from_request(request)
        )
        return _invoice_answer(invoice)


@extend_schema_view(**ADMIN_CREDIT_NOTE_DOCS)
class AdminCreditNoteViewSet(EnvelopeRetrieveMixin, ApiViewSet):
    resource_key = "credit_note"
    serializer_class = CreditNoteSerializer
    required_scopes = {"retrieve": STAFF_READ, "create": STAFF_WRITE}

    def get_queryset(self):
        return credit_notes_all()

    def create(self, request):
        body = validated(CreditNoteCreateSerializer, request)
        invoice = invoices_all().filter(pk=body.pop("invoice")).first()
        if invoice is None:
            raise NotFound("No invoice with this id.")
        credit_note = credit_note_create(invoice=invoice, actor=Actor.from_request(request), **body)
        return created(
            request,
            {"credit_note": CreditNoteSerializer(credit_note).data},
            f"/v1/admin/credit-notes/{credit_note.id}",
        )


@extend_schema_view(**ADMIN_SUBSCRIPTION_DOCS)
class AdminSubscriptionViewSet(EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    """Every account's subscriptions; staff cancel one as its customer could."""

    list_key = "subscriptions"
    resource_key = "subscription"
    serializer_class = SubscriptionSerializer
    filterset_classes = {"list": AdminSubscriptionFilter}
    required_scopes = {"list": STAFF_READ, "retrieve": STAFF_READ, "cancel": STAFF_WRITE}

    def get_queryset(self):
        return subscriptions_all()

    @action(detail=True, methods=["post"])
    def cancel(self, request, pk: str):
        body = validated(SubscriptionCancelSerializer, request)
        subscription = subscription_cancel(
            subscription=self.get_object(),
            at_period_end=body["at_period_end"],
            actor=Actor.from_request(request),
        )
        return Response({"subscription": SubscriptionSerializer(subscription).data})


class CustomerScopedMixin:
    """A staff view under ``/admin/customers/{customer_id}/``: that account, or 404."""

    def customer(self) -> Account:
        return get_object_or_404(Account, pk=self.kwargs["customer_id"])


@extend_schema_view(**ADMIN_BALANCE_TRANSACTION_DOCS)
class AdminBalanceTransactionViewSet(
    CustomerScopedMixin, EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet
):
    list_key = "balance_transactions"
    resource_key = "balance_transaction"
    serializer_class = BalanceTransactionSerializer
    filterset_classes = {"list": BalanceTransactionFilter}
    required_scopes = {"list": STAFF_READ, "retrieve": STAFF_READ, "create": STAFF_WRITE}

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no path
            return BalanceTransaction.objects.none()
        return balance_transactions_of_account(account_id=self.customer().id)

    def create(self, request, customer_id: str):
        account = self.customer()
        body = validated(BalanceTransactionCreateSerializer, request)
        entry = balance_change(
            account=account,
            kind=BalanceTransaction.Kind.ADJUSTMENT,
            actor=Actor.from_request(request),
            **body,
        )
        return created(
            request,
            {"balance_transaction": BalanceTransactionSerializer(entry).data},
            f"/v1/admin/customers/{account.id}/balance-transactions/{entry.id}",
        )


@extend_schema_view(**ADMIN_BILLING_PROFILE_DOCS)
class AdminBillingProfileViewSet(CustomerScopedMixin, ApiViewSet):
    serializer_class = BillingProfileSerializer
    required_scopes = {"retrieve": STAFF_READ, "partial_update": STAFF_WRITE}

    def retrieve(self, request, customer_id: str):
        return _profile_answer(self.customer())

    def partial_update(self, request, customer_id: str):
        account = self.customer()
        body = validated(StaffBillingProfileUpdateSerializer, request)
        if changes := BillingProfileChanges.of(body):
            billing_profile_update(
                account=account, changes=changes, actor=Actor.from_request(request), staff=True
            )
        return _profile_answer(account)


@extend_schema_view(**ADMIN_BILLING_CLOCK_DOCS)
class AdminBillingClockViewSet(CustomerScopedMixin, ApiViewSet):
    """A customer's test clock: read it, start it or move it forward."""

    serializer_class = BillingClockSerializer
    required_scopes = {"retrieve": STAFF_READ, "create": STAFF_WRITE}

    def retrieve(self, request, customer_id: str):
        account = self.customer()
        clock = BillingClock.objects.filter(account=account).first()
        if clock is None:
            raise NotFound("This account has no test clock; POST one to start it.")
        answer = {"customer": account.id, "now": clock.now, "runs": 0, "counts": {}}
        return Response({"billing_clock": BillingClockSerializer(answer).data})

    def create(self, request, customer_id: str):
        account = self.customer()
        body = validated(BillingClockAdvanceSerializer, request)
        now, runs, report = billing_clock_walk(account=account, to=body["to"])
        answer = {"customer": account.id, "now": now, "runs": runs, "counts": report.counts}
        return Response({"billing_clock": BillingClockSerializer(answer).data})


# --- Staff: the catalogue ---------------------------------------------------------------------


def _backup_fields(body: dict) -> dict[str, int]:
    """The plan's backups, schedules and databases as the API takes them (``backups.limit``,
    ``backups.storage_mb``, ``schedules.limit``, ``databases.limit``, ``allocations.limit``), as
    the service takes them (``backup_limit``, ``backup_storage_mb``, ``schedule_limit``,
    ``database_limit``, ``allocation_limit``), taken out of ``body``."""
    fields = {f"backup_{name}": value for name, value in body.pop("backups", {}).items()}
    for area, field in (
        ("schedules", "schedule_limit"),
        ("databases", "database_limit"),
        ("allocations", "allocation_limit"),
    ):
        if area in body:
            fields[field] = body.pop(area)["limit"]
    return fields


@extend_schema_view(**ADMIN_PRODUCT_DOCS)
class AdminProductViewSet(EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    list_key = "products"
    resource_key = "product"
    serializer_class = ProductSerializer
    filterset_classes = {"list": AdminProductFilter}
    required_scopes = {
        "list": STAFF_READ,
        "retrieve": STAFF_READ,
        "create": STAFF_WRITE,
        "partial_update": STAFF_WRITE,
        "archive": STAFF_WRITE,
        "prices": STAFF_WRITE,
    }

    def get_queryset(self):
        return products_all()

    def _answer(self, product, status: int = 200) -> Response:
        return Response(
            {"product": ProductSerializer(products_all().get(pk=product.pk)).data}, status=status
        )

    def create(self, request):
        body = dict(validated(ProductCreateSerializer, request))
        resources = body.pop("resources")
        backups = _backup_fields(body)
        product = product_create(**body, **resources, **backups, actor=Actor.from_request(request))
        answer = self._answer(product)
        return created(request, answer.data, f"/v1/admin/products/{product.id}")

    def partial_update(self, request, pk: str):
        product = self.get_object()
        changes = dict(validated(ProductUpdateSerializer, request))
        changes |= _backup_fields(changes)
        if changes:
            product = product_update(
                product=product, changes=changes, actor=Actor.from_request(request)
            )
        return self._answer(product)

    @action(detail=True, methods=["post"])
    def archive(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        product = product_archive(product=self.get_object(), actor=Actor.from_request(request))
        return self._answer(product)

    @action(detail=True, methods=["post"])
    def prices(self, request, pk: str):
        product = self.get_object()
        body = validated(PriceCreateSerializer, request)
        price = price_create(product=product, **body, actor=Actor.from_request(request))
        return created(
            request, {"price": PriceSerializer(price).data}, f"/v1/admin/products/{product.id}"
        )


@extend_schema_view(**ADMIN_PRICE_DOCS)
class AdminPriceViewSet(ApiViewSet):
    serializer_class = PriceSerializer
    required_scopes = {"archive": STAFF_WRITE}

    def get_queryset(self):
        return Price.objects.all()

    @action(detail=True, methods=["post"])
    def archive(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        price = price_archive(price=self.get_object(), actor=Actor.from_request(request))
        return Response({"price": PriceSerializer(price).data})


@extend_schema_view(**ADMIN_TAX_RATE_DOCS)
class AdminTaxRateViewSet(EnvelopeListMixin, ApiViewSet):
    list_key = "tax_rates"
    serializer_class = TaxRateSerializer
    filterset_classes = {"list": TaxRateFilter}
    required_scopes = {"list": STAFF_READ, "create": STAFF_WRITE, "archive": STAFF_WRITE}

    def get_queryset(self):
        return tax_rates_all()

    def create(self, request):
        body = validated(TaxRateCreateSerializer, request)
        rate = tax_rate_create(**body, actor=Actor.from_request(request))
        return created(request, {"tax_rate": TaxRateSerializer(rate).data}, "/v1/admin/tax-rates")

    @action(detail=True, methods=["post"])
    def archive(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        rate = tax_rate_archive(tax_rate=self.get_object(), actor=Actor.from_request(request))
        return Response({"tax_rate": TaxRateSerializer(rate).data})


@extend_schema_view(**ADMIN_COUPON_DOCS)
class AdminCouponViewSet(EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    list_key = "coupons"
    resource_key = "coupon"
    serializer_class = CouponSerializer
    filterset_classes = {"list": CouponFilter}
    required_scopes = {
        "list": STAFF_READ,
        "retrieve": STAFF_READ,
        "create": STAFF_WRITE,
        "partial_update": STAFF_WRITE,
        "archive": STAFF_WRITE,
    }

    def get_queryset(self):
        return coupons_all()

    def _answer(self, coupon) -> dict:
        return {"coupon": CouponSerializer(coupons_all().get(pk=coupon.pk)).data}

    def create(self, request):
        body = dict(validated(CouponCreateSerializer, request))
        products = body.pop("applies_to", [])
        coupon = coupon_create(**body, products=products, actor=Actor.from_request(request))
        return created(request, self._answer(coupon), f"/v1/admin/coupons/{coupon.id}")

    def partial_update(self, request, pk: str):
        coupon = self.get_object()
        if changes := dict(validated(CouponUpdateSerializer, request)):
            coupon = coupon_update(coupon=coupon, **changes, actor=Actor.from_request(request))
        return Response(self._answer(coupon))

    @action(detail=True, methods=["post"])
    def archive(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        coupon = coupon_archive(coupon=self.get_object(), actor=Actor.from_request(request))
        return Response(self._answer(coupon))


@extend_schema_view(**ADMIN_PROMOTION_CODE_DOCS)
class AdminPromotionCodeViewSet(EnvelopeListMixin, ApiViewSet):
    list_key = "promotion_codes"
    serializer_class = PromotionCodeSerializer
    filterset_classes = {"list": PromotionCodeFilter}
    required_scopes = {"list": STAFF_READ, "create": STAFF_WRITE, "deactivate": STAFF_WRITE}

    def get_queryset(self):
        return promotion_codes_all()

    def create(self, request):
        body = dict(validated(PromotionCodeCreateSerializer, request))
        coupon = coupons_all().filter(pk=body.pop("coupon")).first()
        if coupon is None:
            raise NotFound("No coupon with this id.")
        code = promotion_code_create(coupon=coupon, **body, actor=Actor.from_request(request))
        return created(
            request,
            {"promotion_code": PromotionCodeSerializer(code).data},
            f"/v1/admin/coupons/{coupon.id}",
        )

    @action(detail=True, methods=["post"])
    def deactivate(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        code = promotion_code_deactivate(
            promotion_code=self.get_object(),
            actor=Actor.from_request(request),
        )
        return Response({"promotion_code": PromotionCodeSerializer(code).data})
