"""Staff pages for billing: the catalogue, invoices and what settles them, and the ledger.

Every change is a service call, the same the API makes, so a rule exists once:

- The catalogue (products, prices, tax rates, coupons, promotion codes) is added through the
  ``billing.services.catalogue`` services and archived by an action, never deleted: invoices
  and subscriptions keep pointing at what they were sold. A product's plan can be edited
  (``product_update``), and whether a coupon is redeemed by its id (``coupon_update``); a
  price, a tax rate, the rest of a coupon or a code never is once created.
- Invoices are a read-only record whose page offers what its status allows (the invoice table
  of ``billing/transitions.py``), as POST buttons and changelist actions: finalize, void, mark
  uncollectible, pay with the account's credit; "Mark paid…" (a bank transfer's reference) and
  "Issue a credit note…" lead to a small form first.
- A balance adjustment is added as a ledger entry through ``balance_change``, and an account's
  test clock is started or moved forward through ``billing_clock_advance``. A billing
  profile's staff-only fields (the tax exemption, the account's payment gateways) are changed
  through ``billing_profile_update``. Subscriptions, payments, credit notes and document
  sequences are view-only here.

Add and change forms run their service when the form is cleaned (``ServiceForm``), inside the
admin's transaction, so a refusal shows on its field like any other form error; action and button
refusals become error messages. These forms have no inlines: an inline's formset is validated
after the form, too late to take back the service's write.
"""

from collections.abc import Callable, Iterable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Model
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from accounts.actors import Actor
from accounts.service_admin import (
    ReadOnlyAdmin,
    ServiceActionsAdmin,
    ServiceAdmin,
    ServiceForm,
    add_refusal,
    links,
)
from billing import transitions
from billing.clock import billing_clock_advance
from billing.models import (
    BalanceTransaction,
    BillingClock,
    BillingProfile,
    BillingRunDay,
    Coupon,
    CreditNote,
    DocumentSequence,
    Invoice,
    InvoiceLine,
    InvoiceStatus,
    Payment,
    Price,
    Product,
    PromotionCode,
    Subscription,
    TaxRate,
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
from billing.services.credit_notes import credit_note_create
from billing.services.gateways import GATEWAYS
from billing.services.invoices import (
    invoice_finalize,
    invoice_mark_paid,
    invoice_mark_uncollectible,
    invoice_pay_with_credit,
    invoice_void,
)
from billing.services.ledger import balance_change
from billing.services.profile import BillingProfileChanges, billing_profile_update
from hosting.errors import ApplicationError
from hosting.money import SUPPORTED_CURRENCIES, InvalidAmount, format_amount, parse_amount
from servers.models import BotRuntime
from servers.selectors import game_catalogue, region_catalogue

CURRENCY_CHOICES = [(code, code) for code in sorted(SUPPORTED_CURRENCIES)]


# --- Money as people read and type it -----------------------------------------------------------
# Amounts are stored in minor units (CONTRACT §1); staff read and type them in the currency's
# units ("8.99 EUR", "5" or "5.00"), whatever its decimals (none for JPY).


def amount_field(label: str, help_text: str, *, required: bool = True) -> forms.CharField:
    """A form field taking an amount in the currency's units; ``UnitAmountsForm`` turns it
    into minor units once the currency is known."""
    return forms.CharField(
        label=label,
        required=required,
        help_text=help_text,
        widget=forms.TextInput({"inputmode": "decimal", "autocomplete": "off"}),
    )


class UnitAmountsForm(forms.BaseForm):
    """A form whose ``unit_amounts`` fields are typed in the currency's units: each becomes
    minor units in ``clean``, or its field says why not (not a number, too many decimals,
    negative where it may not be)."""

    # field name -> may it be negative?
    unit_amounts: dict[str, bool] = {}

    def amount_currency(self) -> str | None:
        return self.cleaned_data.get("currency") or None

    def clean(self):
        cleaned = super().clean()
        currency = self.amount_currency()
        for name, allow_negative in self.unit_amounts.items():
            text = cleaned.get(name)
            if text in (None, ""):
                cleaned[name] = None
                continue
            if not currency:
                del cleaned[name]
                if not self.has_error("currency"):
                    self.add_error("currency", "Choose the currency of the amount.")
                continue
            try:
                cleaned[name] = parse_amount(text, currency, allow_negative=allow_negative)
            except InvalidAmount as refused:
                self.add_error(name, str(refused))
        return cleaned


def money_shown(field: str, label: str, currency: Callable[[Any], str] | None = None):
    """An admin column or read-only field showing ``field``'s minor units in its currency."""

    @admin.display(description=label, ordering=field)
    def shown(self, obj) -> str:
        value = getattr(obj, field)
        if value is None:
            return "-"
        return format_amount(value, currency(obj) if currency else obj.currency)

    shown.__name__ = f"{field}_shown"
    return shown


class MoneyFieldsAdmin(admin.ModelAdmin):
    """Shows the ``money_fields`` of an existing row in its currency (a view page, or a change
    page on which they are read only), where Django would print the stored integer."""

    money_fields: tuple[str, ...] = ()

    def _shown(self, names):
        return [f"{name}_shown" if name in self.money_fields else name for name in names]

    def get_fields(self, request, obj=None):
        fields = super().get_fields(request, obj)
        return fields if obj is None else self._shown(fields)

    def get_readonly_fields(self, request, obj=None):
        readonly = super().get_readonly_fields(request, obj)
        return readonly if obj is None else self._shown(readonly)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form_class = super().get_form(request, obj, change=change, **kwargs)
        if obj is None:
            return form_class
        # Shown read only under their ``_shown`` names: the form's own typed fields go.
        dropped = {name: None for name in self.money_fields if name in form_class.base_fields}
        return type(form_class.__name__, (form_class,), dropped) if dropped else form_class


def address_block(snapshot: dict | None) -> str:
    """A buyer's or seller's snapshot (``billing.pdf``'s ``BuyerSnapshot``/``SellerSnapshot``)
    as the address it is, one line each, rather than its JSON."""
    if not snapshot:
        return "-"
    lines = [snapshot.get("name", ""), *snapshot.get("address_lines", [])]
    lines.append(snapshot.get("country", ""))
    if snapshot.get("vat_id"):
        lines.append(f"VAT ID {snapshot['vat_id']}")
    if snapshot.get("email"):
        lines.append(snapshot["email"])
    bank = snapshot.get("bank_account")
    if bank:
        lines.append(f"Bank: {bank.get('account_holder', '')}, IBAN {bank.get('iban', '')}")
        if bank.get("bic"):
            lines.append(f"BIC {bank['bic']}")
    shown = [(line,) for line in lines if line]
    return format_html(
        '<div class="address">{}</div>', format_html_join(mark_safe("<br>"), "{}", shown)
    )


# --- The catalogue ------------------------------------------------------------------------------


PRODUCT_FIELDS = [
    "name",
    "description",
    "kind",
    "memory_mb",
    "cpu_percent",
    "disk_mb",
    "backup_limit",
    "backup_storage_mb",
    "schedule_limit",
    "database_limit",
    "allocation_limit",
    "games",
    "regions",
    "runtimes",
    "suspend_after_days",
    "terminate_after_days",
]
RESOURCES = {"memory_mb", "cpu_percent", "disk_mb"}
BACKUP_FIELDS = (
    "backup_limit",
    "backup_storage_mb",
    "schedule_limit",
    "database_limit",
    "allocation_limit",
)


def _games() -> list[tuple[str, str]]:
    return [(game.slug, game.name) for game in game_catalogue()]


def _regions() -> list[tuple[str, str]]:
    return [(region.slug, region.name) for region in region_catalogue()]


class ProductForm(ServiceForm):
    games = forms.MultipleChoiceField(
        choices=_games,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: any.",
    )
    regions = forms.MultipleChoiceField(
        choices=_regions,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: any.",
    )
    runtimes = forms.MultipleChoiceField(
        choices=BotRuntime.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Bot plans only. None ticked: any.",
    )

    class Meta:
        model = Product
        fields = PRODUCT_FIELDS
        help_texts = {
            "suspend_after_days": "Days after an unpaid renewal's due date; empty: the setting.",
            "terminate_after_days": "Days after the due date; empty: the setting.",
            "backup_limit": "Backups each server or bot keeps; empty: 3.",
            "backup_storage_mb": "MB their backups may take in all; empty: 10240.",
            "schedule_limit": "Schedules each server or bot may have; empty: 5.",
            "database_limit": "Databases each server or bot may have; empty: 1.",
            "allocation_limit": "Ports (allocations) each server may hold; empty: 1.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in BACKUP_FIELDS:
            self.fields[name].required = False

    def _backup_value(self, name: str) -> int:
        value = self.cleaned_data.get(name)
        return Product._meta.get_field(name).default if value is None else value

    def clean_backup_limit(self) -> int:
        return self._backup_value("backup_limit")

    def clean_backup_storage_mb(self) -> int:
        return self._backup_value("backup_storage_mb")

    def clean_schedule_limit(self) -> int:
        return self._backup_value("schedule_limit")

    def clean_database_limit(self) -> int:
        return self._backup_value("database_limit")

    def clean_allocation_limit(self) -> int:
        return self._backup_value("allocation_limit")


@admin.register(Product)
class ProductAdmin(ServiceAdmin):
    """A plan is added with ``product_create`` and edited with ``product_update``; its prices
    are added on the Price pages."""

    form = ProductForm
    editable_after_add = True
    list_display = [
        "name",
        "kind",
        "memory_mb",
        "cpu_percent",
        "disk_mb",
        "backup_limit",
        "active",
        "id",
        "created_at",
    ]
    list_filter = ["kind", "active"]
    search_fields = ["name", "id"]
    fields = ["id", *PRODUCT_FIELDS, "active", "price_links", "created_at", "updated_at"]
    readonly_fields = ["id", "active", "price_links", "created_at", "updated_at"]
    actions = ["archive_selected"]

    def save_through_service(self, form, *, actor, change):
        data = form.cleaned_data
        if not change:
            return product_create(**{name: data[name] for name in PRODUCT_FIELDS}, actor=actor)
        changes = {name: data[name] for name in form.changed_data if name not in RESOURCES}
        resources = {name: data[name] for name in form.changed_data if name in RESOURCES}
        if resources:
            changes["resources"] = resources
        if not changes:
            return form.instance
        return product_update(product=form.instance, changes=changes, actor=actor)

    @admin.display(description="Prices")
    def price_links(self, obj: Product) -> str:
        add = reverse("admin:billing_price_add") + f"?product={obj.pk}"
        return format_html('{}<br><a href="{}">Add a price</a>', links(obj.prices.all()), add)

    @admin.action(description="Archive selected products and their prices", permissions=["change"])
    def archive_selected(self, request, queryset):
        self.run(request, queryset, product_archive, "product", "Archived")


class PriceForm(UnitAmountsForm, ServiceForm):
    currency = forms.ChoiceField(choices=CURRENCY_CHOICES)
    unit_amount = amount_field("Unit amount", "In the currency's units: 12.50 is 12.50 EUR.")
    setup_fee = amount_field(
        "Setup fee", "Charged once, on the first invoice; in the currency's units.", required=False
    )
    unit_amounts = {"unit_amount": False, "setup_fee": False}

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("setup_fee") is None and "setup_fee" in cleaned:
            cleaned["setup_fee"] = 0
        return cleaned

    class Meta:
        model = Price
        fields = [
            "product",
            "currency",
            "unit_amount",
            "interval",
            "interval_count",
            "setup_fee",
            "trial_days",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "product" in self.fields:
            self.fields["product"].queryset = Product.objects.filter(active=True)


@admin.register(Price)
class PriceAdmin(MoneyFieldsAdmin, ServiceAdmin):
    """Added with ``price_create``; never edited (a new price replaces it), archived by action."""

    form = PriceForm
    list_display = [
        "product",
        "amount",
        "interval",
        "interval_count",
        "setup_fee_shown",
        "trial_days",
        "active",
        "id",
    ]
    list_filter = ["currency", "interval", "active"]
    list_select_related = ["product"]
    search_fields = ["id", "product__name", "product__id"]
    fields = [*PriceForm.Meta.fields, "id", "active", "created_at"]
    readonly_fields = ["id", "active", "created_at"]
    actions = ["archive_selected"]
    money_fields = ("unit_amount", "setup_fee")
    unit_amount_shown = money_shown("unit_amount", "Unit amount")
    setup_fee_shown = money_shown("setup_fee", "Setup fee")

    def save_through_service(self, form, *, actor, change):
        return price_create(**form.cleaned_data, actor=actor)

    @admin.display(description="Amount", ordering="unit_amount")
    def amount(self, obj: Price) -> str:
        return format_amount(obj.unit_amount, obj.currency)

    @admin.action(description="Archive selected prices", permissions=["change"])
    def archive_selected(self, request, queryset):
        self.run(request, queryset, price_archive, "price", "Archived")


class TaxRateForm(ServiceForm):
    class Meta:
        model = TaxRate
        fields = ["country", "region", "percentage", "display_name", "inclusive"]
        help_texts = {
            "country": "ISO 3166-1 alpha-2, like NL.",
            "region": "Optional: an ISO 3166-2 subdivision, like US-NY.",
            "inclusive": "Prices include this tax.",
        }


@admin.register(TaxRate)
class TaxRateAdmin(ServiceAdmin):
    """Added with ``tax_rate_create`` (one active rate per place); archived, never edited:
    finalized invoices keep the rate they were taxed at."""

    form = TaxRateForm
    list_display = ["__str__", "country", "region", "percentage", "inclusive", "active", "id"]
    list_filter = ["active", "inclusive", "country"]
    search_fields = ["id", "country", "region", "display_name"]
    fields = [*TaxRateForm.Meta.fields, "id", "active", "created_at"]
    readonly_fields = ["id", "active", "created_at"]
    actions = ["archive_selected"]

    def save_through_service(self, form, *, actor, change):
        return tax_rate_create(**form.cleaned_data, actor=actor)

    @admin.action(description="Archive selected tax rates", permissions=["change"])
    def archive_selected(self, request, queryset):
        self.run(request, queryset, tax_rate_archive, "tax_rate", "Archived")


class CouponForm(UnitAmountsForm, ServiceForm):
    currency = forms.ChoiceField(
        choices=[("", "-"), *CURRENCY_CHOICES],
        required=False,
        help_text="For an amount off only.",
    )
    amount_off = amount_field(
        "Amount off", "… or an amount off, in the currency's units (5.00).", required=False
    )
    unit_amounts = {"amount_off": False}

    class Meta:
        model = Coupon
        fields = [
            "name",
            "duration",
            "duration_in_months",
            "percent_off",
            "amount_off",
            "currency",
            "max_redemptions",
            "redeem_by",
            "products",
            "directly_redeemable",
        ]
        help_texts = {
            "percent_off": "Either a percentage off (up to 100, two decimals) …",
            "duration_in_months": "For a repeating coupon only.",
            "products": "None chosen: every product.",
        }


@admin.register(Coupon)
class CouponAdmin(MoneyFieldsAdmin, ServiceAdmin):
    """Added with ``coupon_create``; archived (with its promotion codes). Its page changes only
    whether customers may order with its id (``coupon_update``): what it discounts never
    changes once sold."""

    form = CouponForm
    editable_after_add = True
    list_display = [
        "name",
        "discount",
        "duration",
        "times_redeemed",
        "max_redemptions",
        "redeem_by",
        "directly_redeemable",
        "active",
        "id",
    ]
    list_filter = ["active", "directly_redeemable", "duration"]
    search_fields = ["id", "name"]
    filter_horizontal = ["products"]
    fields = [*CouponForm.Meta.fields, "id", "times_redeemed", "active", "created_at"]
    readonly_fields = ["id", "times_redeemed", "active", "created_at"]
    actions = ["archive_selected"]

    money_fields = ("amount_off",)
    amount_off_shown = money_shown("amount_off", "Amount off")

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return self.readonly_fields
        return self._shown([name for name in self.fields if name != "directly_redeemable"])

    def save_through_service(self, form, *, actor, change):
        if change:
            return coupon_update(
                coupon=form.instance,
                directly_redeemable=form.cleaned_data["directly_redeemable"],
                actor=actor,
            )
        return coupon_create(**form.cleaned_data, actor=actor)

    @admin.display(description="Discount")
    def discount(self, obj: Coupon) -> str:
        if obj.percent_off is not None:
            return f"{obj.percent_off.normalize():f} %"
        return format_amount(obj.amount_off, obj.currency)

    @admin.action(description="Archive selected coupons and their codes", permissions=["change"])
    def archive_selected(self, request, queryset):
        self.run(request, queryset, coupon_archive, "coupon", "Archived")


class PromotionCodeForm(ServiceForm):
    class Meta:
        model = PromotionCode
        fields = ["coupon", "code", "max_redemptions", "expires_at"]
        help_texts = {"code": "3 to 50 letters, digits, - or _; stored upper-case."}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "coupon" in self.fields:
            self.fields["coupon"].queryset = Coupon.objects.filter(active=True)


@admin.register(PromotionCode)
class PromotionCodeAdmin(ServiceAdmin):
    """Added with ``promotion_code_create``; deactivated, never edited or deleted."""

    form = PromotionCodeForm
    list_display = [
        "code",
        "coupon",
        "active",
        "times_redeemed",
        "max_redemptions",
        "expires_at",
        "id",
    ]
    list_filter = ["active"]
    list_select_related = ["coupon"]
    search_fields = ["code", "id", "coupon__name"]
    fields = [*PromotionCodeForm.Meta.fields, "id", "times_redeemed", "active", "created_at"]
    readonly_fields = ["id", "times_redeemed", "active", "created_at"]
    actions = ["deactivate_selected"]

    def save_through_service(self, form, *, actor, change):
        return promotion_code_create(**form.cleaned_data, actor=actor)

    @admin.action(description="Deactivate selected promotion codes", permissions=["change"])
    def deactivate_selected(self, request, queryset):
        self.run(request, queryset, promotion_code_deactivate, "promotion_code", "Deactivated")


# --- The ledger and the test clock --------------------------------------------------------------


class BalanceAdjustmentForm(UnitAmountsForm, ServiceForm):
    currency = forms.ChoiceField(choices=CURRENCY_CHOICES)
    amount = amount_field(
        "Amount",
        "In the currency's units: 5 or 5.00 adds 5.00 of credit, -5.00 takes it away.",
    )
    unit_amounts = {"amount": True}

    class Meta:
        model = BalanceTransaction
        fields = ["account", "amount", "currency", "description"]
        help_texts = {
            "description": "Why: the customer sees it in their balance's history.",
        }


@admin.register(BalanceTransaction)
class BalanceTransactionAdmin(MoneyFieldsAdmin, ServiceAdmin):
    """The credit ledger, never changed or deleted; staff add an adjustment (``balance_change``
    with kind ``adjustment``), which records ``customer.balance_changed``."""

    form = BalanceAdjustmentForm
    list_display = [
        "id",
        "account",
        "kind",
        "signed_amount",
        "ending",
        "description",
        "created_at",
    ]
    list_filter = ["kind", "currency"]
    list_select_related = ["account"]
    search_fields = ["id", "account__name", "account__id", "description"]
    autocomplete_fields = ["account"]
    date_hierarchy = "created_at"
    fields = [
        "account",
        "amount",
        "currency",
        "description",
        "id",
        "kind",
        "ending_balance",
        "invoice",
        "credit_note",
        "created_by",
        "created_at",
    ]
    readonly_fields = [
        "id",
        "kind",
        "ending_balance",
        "invoice",
        "credit_note",
        "created_by",
        "created_at",
    ]

    money_fields = ("amount", "ending_balance")
    amount_shown = money_shown("amount", "Amount")
    ending_balance_shown = money_shown("ending_balance", "Balance after")

    def get_changeform_initial_data(self, request):
        # "Add credit" on a customer's page names the account (and its currency).
        initial = super().get_changeform_initial_data(request)
        account = initial.get("account")
        if account and "currency" not in initial:
            profile = BillingProfile.objects.filter(account_id=account).first()
            if profile is not None and profile.currency:
                initial["currency"] = profile.currency
        return initial

    def save_through_service(self, form, *, actor, change):
        return balance_change(**form.cleaned_data, kind="adjustment", actor=actor)

    @admin.display(description="Amount", ordering="amount")
    def signed_amount(self, obj: BalanceTransaction) -> str:
        return format_amount(obj.amount, obj.currency)

    @admin.display(description="Balance after", ordering="ending_balance")
    def ending(self, obj: BalanceTransaction) -> str:
        return format_amount(obj.ending_balance, obj.currency)


class BillingClockForm(ServiceForm):
    field_aliases = {"to": "now"}

    class Meta:
        model = BillingClock
        fields = ["account", "now"]
        labels = {"now": "Billing time"}
        help_texts = {"now": "A clock only moves forward."}


@admin.register(BillingClock)
class BillingClockAdmin(ServiceAdmin):
    """An account's test clock (demo and test accounts: its documents take TEST- numbers),
    started or moved forward with ``billing_clock_advance``; never back, never removed."""

    form = BillingClockForm
    editable_after_add = True
    list_display = ["account", "now", "updated_at"]
    list_select_related = ["account"]
    search_fields = ["account__name", "account__id"]
    autocomplete_fields = ["account"]
    fields = ["account", "now", "updated_at"]

    def get_readonly_fields(self, request, obj=None):
        return ["updated_at"] if obj is None else ["account", "updated_at"]

    def save_through_service(self, form, *, actor, change):
        account = form.instance.account if change else form.cleaned_data["account"]
        return billing_clock_advance(account=account, to=form.cleaned_data["now"])


# --- Invoices and what settles them -------------------------------------------------------------


def _line_currency(line: InvoiceLine) -> str:
    return line.invoice.currency


class InvoiceLineInline(admin.TabularInline):
    model = InvoiceLine
    fields = [
        "position",
        "description",
        "price",
        "quantity",
        "unit_amount_shown",
        "amount_shown",
        "discount_amount_shown",
        "tax_amount_shown",
        "period_start",
        "period_end",
        "proration",
    ]
    readonly_fields = fields
    unit_amount_shown = money_shown("unit_amount", "Unit amount", _line_currency)
    amount_shown = money_shown("amount", "Amount", _line_currency)
    discount_amount_shown = money_shown("discount_amount", "Discount", _line_currency)
    tax_amount_shown = money_shown("tax_amount", "Tax", _line_currency)
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class MarkPaidForm(forms.Form):
    reference = forms.CharField(
        max_length=200, help_text="The bank transfer's reference, so it can be found again."
    )


class CreditNoteForm(UnitAmountsForm, forms.Form):
    amount = amount_field("Amount", "In the invoice's currency's units (5.00).")
    unit_amounts = {"amount": False}

    def __init__(self, *args, currency: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.currency = currency
        self.fields["amount"].help_text = f"In {currency}, the invoice's currency."

    def amount_currency(self) -> str:
        return self.currency

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("amount") == 0:
            self.add_error("amount", "The amount must be more than zero.")
        return cleaned

    reason = forms.ChoiceField(choices=CreditNote.Reason.choices)
    refund_to = forms.ChoiceField(choices=CreditNote.RefundTo.choices)
    memo = forms.CharField(max_length=500, required=False, widget=forms.Textarea({"rows": 3}))


# An invoice's amounts as its page shows them, formatted in its currency.
INVOICE_AMOUNTS = {
    "subtotal": "Subtotal",
    "discount": "Discount",
    "tax": "Tax",
    "total": "Total",
    "amount_paid": "Paid",
    "amount_credited": "Credited",
    "amount_remaining": "Remaining",
}


def invoice_amounts(invoice: Invoice, fields: Iterable[str] = INVOICE_AMOUNTS) -> dict[str, str]:
    return {
        INVOICE_AMOUNTS[field]: format_amount(getattr(invoice, field), invoice.currency)
        for field in fields
    }


# The invoice services staff run from the changelist and from an invoice's buttons: the
# status each leads to (its edge in billing/transitions.py), its label, and its report verb.
INVOICE_ACTIONS: dict[str, tuple[str, str, str, Callable[..., Invoice]]] = {
    "finalize": (InvoiceStatus.OPEN, "Finalize", "Finalized", invoice_finalize),
    "void": (InvoiceStatus.VOID, "Void", "Voided", invoice_void),
    "mark_uncollectible": (
        InvoiceStatus.UNCOLLECTIBLE,
        "Mark uncollectible",
        "Marked uncollectible",
        invoice_mark_uncollectible,
    ),
    "pay_with_credit": (
        InvoiceStatus.PAID,
        "Pay with credit",
        "Paid with credit",
        invoice_pay_with_credit,
    ),
}


@admin.register(Invoice)
class InvoiceAdmin(ServiceActionsAdmin):
    """Invoices as issued: every change is one of the invoice services (``INVOICE_ACTIONS``,
    mark paid, credit notes), from the changelist or the invoice's page."""

    list_display = [
        "__str__",
        "account",
        "status",
        "billing_reason",
        "total_amount",
        "remaining_amount",
        "due_date",
        "created_at",
    ]
    list_filter = ["status", "billing_reason", "currency"]
    list_select_related = ["account"]
    search_fields = ["number", "id", "account__name"]
    date_hierarchy = "created_at"
    inlines = [InvoiceLineInline]
    fields = [
        "id",
        "number",
        "status",
        "account",
        "subscription",
        "billing_reason",
        "currency",
        "period_start",
        "period_end",
        "amounts",
        "tax_percentage",
        "tax_inclusive",
        "coupon",
        "due_date",
        "credit_note_links",
        "payment_links",
        "buyer_address",
        "seller_address",
        "notes",
        "attempt_count",
        "next_payment_attempt",
        "created_at",
        "finalized_at",
        "paid_at",
        "voided_at",
        "marked_uncollectible_at",
    ]
    readonly_fields = fields
    actions = [
        "finalize_selected",
        "void_selected",
        "mark_uncollectible_selected",
        "pay_with_credit_selected",
    ]

    def has_add_permission(self, request) -> bool:
        return False  # invoices are drafted by subscriptions and the billing run

    @admin.display(description="Total", ordering="total")
    def total_amount(self, obj: Invoice) -> str:
        return format_amount(obj.total, obj.currency)

    @admin.display(description="Remaining", ordering="amount_remaining")
    def remaining_amount(self, obj: Invoice) -> str:
        return format_amount(obj.amount_remaining, obj.currency)

    @admin.display(description="Amounts")
    def amounts(self, obj: Invoice) -> str:
        shown = invoice_amounts(obj).items()
        return format_html_join(mark_safe("<br>"), "{}: {}", shown)

    @admin.display(description="Buyer")
    def buyer_address(self, obj: Invoice) -> str:
        return address_block(obj.buyer)

    @admin.display(description="Seller")
    def seller_address(self, obj: Invoice) -> str:
        return address_block(obj.seller)

    @admin.display(description="Credit notes")
    def credit_note_links(self, obj: Invoice) -> str:
        return links(obj.credit_notes.all())

    @admin.display(description="Payments")
    def payment_links(self, obj: Invoice) -> str:
        return links(obj.payments.all())

    def act(self, request: HttpRequest, invoices: Iterable[Invoice], name: str) -> None:
        _, _, verb, service = INVOICE_ACTIONS[name]
        self.run(request, invoices, service, "invoice", verb)

    @admin.action(description="Finalize selected draft invoices", permissions=["change"])
    def finalize_selected(self, request, queryset):
        self.act(request, queryset, "finalize")

    @admin.action(description="Void selected invoices", permissions=["change"])
    def void_selected(self, request, queryset):
        self.act(request, queryset, "void")

    @admin.action(description="Mark selected invoices uncollectible", permissions=["change"])
    def mark_uncollectible_selected(self, request, queryset):
        self.act(request, queryset, "mark_uncollectible")

    @admin.action(
        description="Pay selected invoices with the account's credit", permissions=["change"]
    )
    def pay_with_credit_selected(self, request, queryset):
        self.act(request, queryset, "pay_with_credit")

    # --- One invoice's page: a POST button per service its status allows ----------------------

    def _url_name(self, view: str) -> str:
        return f"{self.admin_site.name}:{self.opts.app_label}_{self.opts.model_name}_{view}"

    def get_urls(self):
        def route(suffix: str, view: Callable, name: str):
            return path(
                f"<path:object_id>/{suffix}",
                self.admin_site.admin_view(require_POST(view)),
                name=f"{self.opts.app_label}_{self.opts.model_name}_{name}",
            )

        # Ahead of the defaults, whose catch-all "<path:object_id>/" would take them otherwise.
        return [
            route("act/<slug:name>/", self.act_view, "act"),
            route("mark-paid/", self.mark_paid_view, "mark_paid"),
            route("credit-note/", self.credit_note_view, "credit_note"),
            *super().get_urls(),
        ]

    def buttons(self, invoice: Invoice) -> list[dict[str, str]]:
        """The services the invoice's status allows (by the transitions table), as buttons."""
        allowed = transitions.allowed("invoice", invoice.status)
        pk = quote(invoice.pk)
        shown = [
            {"label": label, "url": reverse(self._url_name("act"), args=[pk, name])}
            for name, (status, label, _, _) in INVOICE_ACTIONS.items()
            if status in allowed
        ]
        if InvoiceStatus.PAID in allowed:
            url = reverse(self._url_name("mark_paid"), args=[pk])
            shown.append({"label": "Mark paid…", "url": url})
        if invoice.status not in (InvoiceStatus.DRAFT, InvoiceStatus.VOID):
            url = reverse(self._url_name("credit_note"), args=[pk])
            shown.append({"label": "Issue a credit note…", "url": url})
        return shown

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None and self.has_change_permission(request):
            context["invoice_buttons"] = self.buttons(obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def _invoice(self, request: HttpRequest, object_id: str) -> Invoice:
        invoice = self.get_object(request, unquote(object_id))
        if invoice is None:
            raise Http404
        if not self.has_change_permission(request):
            raise PermissionDenied
        return invoice

    def _back(self, invoice: Invoice) -> HttpResponse:
        return redirect(self._url_name("change"), quote(invoice.pk))

    def act_view(self, request: HttpRequest, object_id: str, name: str) -> HttpResponse:
        """One service on one invoice (POST only), then back to its page with the outcome.
        The page offered what its status allowed when it was drawn; the service decides."""
        invoice = self._invoice(request, object_id)
        if name not in INVOICE_ACTIONS:
            raise Http404
        self.act(request, [invoice], name)
        return self._back(invoice)

    def mark_paid_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A bank transfer received: its reference first, then ``invoice_mark_paid``."""
        invoice = self._invoice(request, object_id)
        return self._form_step(
            request,
            invoice,
            MarkPaidForm,
            title=f"Mark {invoice} paid",
            perform=lambda data, actor: invoice_mark_paid(
                invoice=invoice, reference=data["reference"], actor=actor
            ),
            done=lambda paid: f"Marked {paid} paid.",
        )

    def credit_note_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A correction of the invoice: amount, reason and where the money goes, then
        ``credit_note_create``."""
        invoice = self._invoice(request, object_id)
        owed = invoice.amount_remaining > 0
        return self._form_step(
            request,
            invoice,
            CreditNoteForm,
            title=f"Issue a credit note for {invoice}",
            initial={"refund_to": "none" if owed else "balance"},
            form_kwargs={"currency": invoice.currency},
            perform=lambda data, actor: credit_note_create(invoice=invoice, actor=actor, **data),
            done=lambda note: f"Issued credit note {note} for {invoice}.",
        )

    def _form_step(
        self,
        request: HttpRequest,
        invoice: Invoice,
        form_class: type[forms.Form],
        *,
        title: str,
        perform: Callable[[dict[str, Any], Actor], Model],
        done: Callable[[Model], str],
        initial: dict[str, Any] | None = None,
        form_kwargs: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The button's POST shows the form; the form's POST (``confirm``) runs the service.
        A refusal naming a field stays on the form; any other goes back to the invoice."""
        data = request.POST if "confirm" in request.POST else None
        form = form_class(data, initial=initial, **(form_kwargs or {}))
        if form.is_bound and form.is_valid():
            try:
                made = perform(form.cleaned_data, Actor.from_request(request))
            except ApplicationError as refusal:
                if not (refusal.details or {}).get("fields"):
                    self.message_user(request, f"{invoice}: {refusal.message}", messages.ERROR)
                    return self._back(invoice)
                add_refusal(form, refusal, {})
            else:
                self.message_user(request, done(made), messages.SUCCESS)
                return self._back(invoice)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": title,
            "invoice": invoice,
            "form": form,
            "amounts": invoice_amounts(
                invoice, ["total", "amount_paid", "amount_credited", "amount_remaining"]
            ),
        }
        return TemplateResponse(request, "admin/billing/invoice/form_step.html", context)


@admin.register(CreditNote)
class CreditNoteAdmin(ReadOnlyAdmin):
    """Issued from an invoice's page ("Issue a credit note…"); never changed afterwards."""

    list_display = ["number", "invoice", "account", "credited", "reason", "refund_to", "created_at"]
    list_filter = ["reason", "refund_to", "currency"]
    list_select_related = ["invoice", "account"]
    search_fields = ["number", "id", "invoice__number", "account__name"]
    date_hierarchy = "created_at"
    fields = [
        "id",
        "number",
        "invoice",
        "account",
        "currency",
        "credited",
        "reason",
        "refund_to",
        "memo",
        "buyer_address",
        "seller_address",
        "created_by",
        "created_at",
    ]
    readonly_fields = fields

    @admin.display(description="Amount", ordering="amount")
    def credited(self, obj: CreditNote) -> str:
        return format_amount(obj.amount, obj.currency)

    @admin.display(description="Buyer")
    def buyer_address(self, obj: CreditNote) -> str:
        return address_block(obj.buyer)

    @admin.display(description="Seller")
    def seller_address(self, obj: CreditNote) -> str:
        return address_block(obj.seller)


@admin.register(Payment)
class PaymentAdmin(ReadOnlyAdmin):
    """Money received or tried, as the gateways and "Mark paid…" recorded it."""

    list_display = [
        "id",
        "invoice",
        "account",
        "gateway",
        "status",
        "paid",
        "reference",
        "created_at",
    ]
    list_filter = ["status", "gateway", "currency"]
    list_select_related = ["invoice", "account"]
    search_fields = ["id", "reference", "invoice__number", "account__name"]
    date_hierarchy = "created_at"
    fields = [
        "id",
        "invoice",
        "account",
        "gateway",
        "status",
        "paid",
        "currency",
        "reference",
        "gateway_reference",
        "failure_message",
        "created_by",
        "created_at",
        "succeeded_at",
        "failed_at",
        "refunded_at",
    ]
    readonly_fields = fields
    search_fields = [*search_fields, "gateway_payment_id"]

    @admin.display(description="Amount", ordering="amount")
    def paid(self, obj: Payment) -> str:
        return format_amount(obj.amount, obj.currency)

    @admin.display(description="Gateway reference")
    def gateway_reference(self, obj: Payment) -> str:
        """The payment at its gateway (a PaymentIntent at Stripe), linked to the gateway's own
        dashboard when the gateway says where it is."""
        if not obj.gateway_payment_id:
            return "-"
        known = GATEWAYS.get(obj.gateway)
        url = known.reference_url(obj) if known is not None else None
        if not url:
            return obj.gateway_payment_id
        return format_html(
            '<a href="{}" target="_blank" rel="noopener">{}</a>', url, obj.gateway_payment_id
        )


@admin.register(Subscription)
class SubscriptionAdmin(ReadOnlyAdmin):
    """Ordered, changed and canceled by customers (API, dashboard) and the billing run."""

    list_display = [
        "id",
        "account",
        "status",
        "price",
        "current_period_end",
        "cancel_at_period_end",
        "created_at",
    ]
    list_filter = ["status", "cancel_at_period_end", "billing_suspended"]
    list_select_related = ["account", "price__product"]
    search_fields = ["id", "account__name", "account__id"]
    date_hierarchy = "created_at"
    fields = [
        "id",
        "account",
        "status",
        "price",
        "quantity",
        "server",
        "bot",
        "order",
        "invoice_links",
        "billing_cycle_anchor",
        "current_period_start",
        "current_period_end",
        "trial_end",
        "cancel_at_period_end",
        "canceled_at",
        "ended_at",
        "coupon",
        "discount_end",
        "billing_suspended",
        "trial_notified_at",
        "termination_warned_at",
        "created_at",
        "updated_at",
    ]
    readonly_fields = fields

    @admin.display(description="Invoices")
    def invoice_links(self, obj: Subscription) -> str:
        return links(obj.invoices.all())


class BillingProfileForm(ServiceForm):
    payment_gateways = forms.CharField(
        label="Payment gateways",
        required=False,
        help_text="This account's own gateways, in the order they collect, separated by commas "
        "(say: bank_transfer). Empty: the service's default.",
    )

    class Meta:
        model = BillingProfile
        fields = ["tax_exempt", "payment_gateways"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.initial["payment_gateways"] = ", ".join(self.instance.payment_gateways or [])
        offered = ", ".join(GATEWAYS)
        self.fields["payment_gateways"].help_text += f" This service has: {offered}."

    def clean_payment_gateways(self) -> list[str]:
        text = self.cleaned_data["payment_gateways"]
        return [name.strip() for name in text.split(",") if name.strip()]


@admin.register(BillingProfile)
class BillingProfileAdmin(ServiceAdmin):
    """Who an account's invoices are made out to; its owners keep it up to date. Staff set
    what only they may (``billing_profile_update(staff=True)``): the tax exemption and the
    account's own payment gateways."""

    form = BillingProfileForm
    editable_after_add = True
    list_display = [
        "account",
        "legal_name",
        "country",
        "vat_id",
        "tax_exempt",
        "payment_gateways",
        "currency",
    ]
    list_filter = ["tax_exempt", "currency", "country"]
    list_select_related = ["account"]
    search_fields = ["account__name", "account__id", "legal_name", "vat_id", "email"]
    fields = [
        "account",
        "legal_name",
        "email",
        "address_line1",
        "address_line2",
        "postal_code",
        "city",
        "region",
        "country",
        "vat_id",
        "currency",
        "tax_exempt",
        "payment_gateways",
        "updated_at",
    ]
    readonly_fields = [
        "account",
        "legal_name",
        "email",
        "address_line1",
        "address_line2",
        "postal_code",
        "city",
        "region",
        "country",
        "vat_id",
        "currency",
        "updated_at",
    ]

    def has_add_permission(self, request) -> bool:
        return False  # a profile comes with its account's first billing change

    def save_through_service(self, form, *, actor, change):
        changes = BillingProfileChanges.of(
            {name: form.cleaned_data[name] for name in form.changed_data}
        )
        return billing_profile_update(
            account=form.instance.account, changes=changes, actor=actor, staff=True
        )


@admin.register(DocumentSequence)
class DocumentSequenceAdmin(ReadOnlyAdmin):
    """The next number of each series; taken only when a document is issued."""

    list_display = ["series", "next_number"]
    search_fields = ["series"]


@admin.register(BillingRunDay)
class BillingRunDayAdmin(ReadOnlyAdmin):
    """What the billing job did each day: written by the job only (the staff home shows today)."""

    list_display = ["day", "runs", "last_run_at", "steps"]
    date_hierarchy = "day"

    @admin.display(description="What it did")
    def steps(self, obj: BillingRunDay) -> str:
        return ", ".join(f"{step} {count}" for step, count in sorted(obj.counts.items())) or "—"
