"""Dashboard forms of the Billing pages: they collect input; billing/services decides.

The billing profile's form reads what a form can (each text within its column, the e-mail's
shape, worded as the API words them) into ``BillingProfileChanges``; the rules (a real country,
the VAT id checked against it) are ``billing_profile_update``'s, and its refusals come back
through ``ServiceErrorFormMixin`` next to the field they name, so every rule is written once.

The lists' filter menus are the API's filters (``billing/filters.py``) narrowed to what a menu
offers: one value each, chosen from a list. Sorting is the list's own ``?sort=`` and the
account has one currency, so the API's ``ordering`` and ``currency`` are left out.
"""

import django_filters
from django import forms
from django.core.validators import EmailValidator, MaxLengthValidator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from billing.filters import (
    BalanceTransactionFilter,
    InvoiceFilter,
    PaymentFilter,
    SubscriptionFilter,
)
from billing.models import (
    BalanceTransaction,
    BillingProfile,
    InvoiceStatus,
    PaymentStatus,
    Price,
    Product,
    Subscription,
    SubscriptionStatus,
)
from billing.services.notices import GATEWAY_LABELS
from billing.services.profile import TEXT_FIELDS, VAT_ID_INPUT_LIMIT, BillingProfileChanges
from hosting.dashboard.refusals import ServiceErrorFormMixin
from hosting.money import format_amount
from servers.forms import BotCreateForm, ServerCreateForm
from servers.models import RESOURCE_LIMITS, Game


class InvoiceListFilter(InvoiceFilter):
    """The invoices page: by status."""

    status = django_filters.ChoiceFilter(
        choices=InvoiceStatus.choices,
        label=gettext_lazy("Status"),
        empty_label=gettext_lazy("Any status"),
    )
    created_after = created_before = due_after = due_before = None
    subscription = currency = ordering = None


class PaymentListFilter(PaymentFilter):
    """The payments page: by status and by how it was paid."""

    status = django_filters.ChoiceFilter(
        choices=PaymentStatus.choices,
        label=gettext_lazy("Status"),
        empty_label=gettext_lazy("Any status"),
    )
    gateway = django_filters.ChoiceFilter(
        choices=sorted(GATEWAY_LABELS.items()),
        label=gettext_lazy("Paid by"),
        empty_label=gettext_lazy("Any means"),
    )
    created_after = created_before = invoice = None


class BalanceListFilter(BalanceTransactionFilter):
    """The balance page: by the kind of entry."""

    kind = django_filters.ChoiceFilter(
        choices=BalanceTransaction.Kind.choices,
        label=gettext_lazy("Kind"),
        empty_label=gettext_lazy("Any kind"),
    )
    created_after = created_before = None


def _text_input(name: str, **attrs) -> forms.TextInput:
    return forms.TextInput(attrs={"maxlength": TEXT_FIELDS[name], **attrs})


def _within(limit: int) -> list[MaxLengthValidator]:
    """At most ``limit`` characters, refused in the API's words."""
    message = gettext_lazy("Ensure this field has no more than %(limit_value)d characters.")
    return [MaxLengthValidator(limit, message)]


class BillingProfileForm(ServiceErrorFormMixin, forms.Form):
    """Who the invoices are made out to. Every field may be left empty; the form checks each
    one's length and the e-mail's shape, the service the rest, all at once
    (``form.changes()`` is what it is given: only what was changed)."""

    legal_name = forms.CharField(
        validators=_within(TEXT_FIELDS["legal_name"]),
        label=gettext_lazy("Legal name"),
        required=False,
        widget=_text_input("legal_name", autocomplete="organization"),
        help_text=gettext_lazy(
            "The person or company invoices are made out to; empty: the account's name."
        ),
    )
    email = forms.CharField(
        validators=[
            *_within(TEXT_FIELDS["email"]),
            EmailValidator(gettext_lazy("Enter a valid e-mail address.")),
        ],
        label=gettext_lazy("Billing e-mail"),
        required=False,
        widget=forms.EmailInput(attrs={"maxlength": TEXT_FIELDS["email"], "autocomplete": "email"}),
        help_text=gettext_lazy("Printed on invoices."),
    )
    address_line1 = forms.CharField(
        validators=_within(TEXT_FIELDS["address_line1"]),
        label=gettext_lazy("Address"),
        required=False,
        widget=_text_input("address_line1", autocomplete="address-line1"),
    )
    address_line2 = forms.CharField(
        validators=_within(TEXT_FIELDS["address_line2"]),
        label=gettext_lazy("Address, second line"),
        required=False,
        widget=_text_input("address_line2", autocomplete="address-line2"),
    )
    postal_code = forms.CharField(
        validators=_within(TEXT_FIELDS["postal_code"]),
        label=gettext_lazy("Postal code"),
        required=False,
        widget=_text_input("postal_code", autocomplete="postal-code"),
    )
    city = forms.CharField(
        label=gettext_lazy("City"),
        required=False,
        validators=_within(TEXT_FIELDS["city"]),
        widget=_text_input("city", autocomplete="address-level2"),
    )
    region = forms.CharField(
        validators=_within(TEXT_FIELDS["region"]),
        label=gettext_lazy("Region or state"),
        required=False,
        widget=_text_input("region", autocomplete="address-level1"),
    )
    country = forms.CharField(
        validators=_within(2),
        label=gettext_lazy("Country"),
        required=False,
        widget=forms.TextInput(attrs={"autocomplete": "country", "size": 2}),
        help_text=gettext_lazy(
            "The two-letter ISO code, such as DE or NL. It decides the tax on invoices."
        ),
    )
    vat_id = forms.CharField(
        validators=_within(VAT_ID_INPUT_LIMIT),
        label=gettext_lazy("VAT ID"),
        required=False,
        widget=forms.TextInput(attrs={"maxlength": VAT_ID_INPUT_LIMIT}),
        help_text=gettext_lazy(
            "For a business in the EU: checked against the country above; a valid one "
            "from another member state than ours is reverse-charged."
        ),
    )

    @classmethod
    def of(cls, profile: BillingProfile, data=None, *, read_only: bool = False):
        """The form filled with ``profile``; with ``read_only``, shown but not editable."""
        form = cls(data, initial={name: getattr(profile, name) for name in cls.base_fields})
        if read_only:
            for field in form.fields.values():
                field.disabled = True
        return form

    def changes(self) -> BillingProfileChanges:
        """What was changed and the form accepted: the fields the service is asked to set (or,
        when the form refused others, to check)."""
        accepted = [name for name in self.changed_data if name in self.cleaned_data]
        return BillingProfileChanges.of({name: self.cleaned_data[name] for name in accepted})


# --- Ordering a plan and managing subscriptions ------------------------------------------------


def price_every(price) -> str:
    """How often ``price`` bills: ``a month``, ``an hour``, ``every 12 months``."""
    count, unit = price.interval_count, price.interval
    if unit == "hour":
        text = ngettext("an hour", "every %(count)d hours", count)
    elif unit == "day":
        text = ngettext("a day", "every %(count)d days", count)
    elif unit == "week":
        text = ngettext("a week", "every %(count)d weeks", count)
    elif unit == "month":
        text = ngettext("a month", "every %(count)d months", count)
    elif unit == "year":
        text = ngettext("a year", "every %(count)d years", count)
    else:  # not an interval billing knows (validate_recurring refuses it): as it is
        return f"every {count} {unit}s" if count > 1 else f"a {unit}"
    return text % {"count": count}


def price_label(price) -> str:
    """``8.99 EUR a month``, ``0.03 EUR an hour``, ``89.90 EUR every 12 months``, with the setup
    fee and the trial when the price has them."""
    amount = format_amount(price.unit_amount, price.currency)
    text = _("%(amount)s %(every)s") % {"amount": amount, "every": price_every(price)}
    if price.setup_fee:
        fee = format_amount(price.setup_fee, price.currency)
        text = _("%(price)s + %(fee)s setup") % {"price": text, "fee": fee}
    if price.trial_days:
        text = ngettext(
            "%(price)s, %(days)d-day free trial",
            "%(price)s, %(days)d-day free trial",
            price.trial_days,
        ) % {"price": text, "days": price.trial_days}
    return text


def plan_label(price) -> str:
    """``Medium: 8.99 EUR a month``: the plan's name and its price."""
    return _("%(plan)s: %(price)s") % {"plan": price.product.name, "price": price_label(price)}


class _OrderFormMixin:
    """What an order adds to the server's or bot's form: a promotion code; no resources (the
    plan decides them), and refusals named ``order.<field>`` shown next to that field."""

    def _order_fields(self, product: Product) -> None:
        for name in (*RESOURCE_LIMITS, "auto_restart", "start_on_install"):
            self.fields.pop(name, None)
        if product.regions:
            self.fields["region"].queryset = self.fields["region"].queryset.filter(
                slug__in=product.regions
            )
        self.fields["promotion_code"] = forms.CharField(
            label=gettext_lazy("Promotion code"),
            required=False,
            max_length=50,
            help_text=gettext_lazy("If you have one: the summary below shows it before you order."),
        )

    def field_for(self, service_name: str) -> str | None:
        return super().field_for(service_name.removeprefix("order."))

    def promotion_code(self) -> str | None:
        return self.cleaned_data.get("promotion_code") or None


class OrderServerForm(_OrderFormMixin, ServerCreateForm):
    def __init__(self, *args, product: Product, game: Game, **kwargs):
        super().__init__(*args, game=game, **kwargs)
        self._order_fields(product)

    def order(self, game: Game) -> dict:
        return {
            "name": self.cleaned_data["name"],
            "region": self.cleaned_data["region"].slug,
            "game": game.slug,
            "variables": self.variables(),
        }


class OrderBotForm(_OrderFormMixin, BotCreateForm):
    def __init__(self, *args, product: Product, **kwargs):
        super().__init__(*args, **kwargs)
        self._order_fields(product)
        if product.runtimes:
            self.fields["runtime"].choices = [
                choice for choice in self.fields["runtime"].choices if choice[0] in product.runtimes
            ]

    def order(self) -> dict:
        return {
            "name": self.cleaned_data["name"],
            "region": self.cleaned_data["region"].slug,
            "runtime": self.cleaned_data["runtime"],
            "start_command": self.cleaned_data["start_command"],
            "environment": self.cleaned_data["environment"],
            "token": self.cleaned_data["token"],
        }


class SubscriptionListFilter(SubscriptionFilter):
    """The subscriptions page: by status."""

    status = django_filters.ChoiceFilter(
        choices=SubscriptionStatus.choices,
        label=gettext_lazy("Status"),
        empty_label=gettext_lazy("Any status"),
    )
    created_after = created_before = price = product = server = bot = ordering = None
    search = None  # the page's own search box


class PlanChangeForm(forms.Form):
    """The plan to change to: another active price of the same kind, in the same currency."""

    price = forms.ModelChoiceField(
        queryset=Price.objects.none(), empty_label=gettext_lazy("Choose a plan…")
    )

    def __init__(self, *args, subscription: Subscription, **kwargs):
        super().__init__(*args, **kwargs)
        current = subscription.price
        self.fields["price"].queryset = (
            Price.objects.filter(
                active=True,
                product__active=True,
                currency=current.currency,
                product__kind=current.product.kind,
            )
            .exclude(pk=current.pk)
            .select_related("product")
            .order_by("product__name", "unit_amount")
        )
        self.fields["price"].label_from_instance = plan_label
