"""Dashboard forms of the Billing pages: they collect input; billing/services decides.

The billing profile's rules (lengths, the e-mail, the country code, the VAT id checked against
the country) are ``billing_profile_update``'s: its refusals come back through
``ServiceErrorFormMixin`` next to the field they name, so every rule is written once.

The lists' filter menus are the API's filters (``billing/filters.py``) narrowed to what a menu
offers: one value each, chosen from a list. Sorting is the list's own ``?sort=`` and the
account has one currency, so the API's ``ordering`` and ``currency`` are left out.
"""

import django_filters
from django import forms

from billing.filters import BalanceTransactionFilter, InvoiceFilter
from billing.models import BalanceTransaction, BillingProfile, InvoiceStatus
from billing.services.profile import TEXT_FIELDS, VAT_ID_INPUT_LIMIT
from hosting.dashboard.refusals import ServiceErrorFormMixin


class InvoiceListFilter(InvoiceFilter):
    """The invoices page: by status."""

    status = django_filters.ChoiceFilter(
        choices=InvoiceStatus.choices, label="Status", empty_label="Any status"
    )
    created_after = created_before = due_after = due_before = None
    subscription = currency = ordering = None


class BalanceListFilter(BalanceTransactionFilter):
    """The balance page: by the kind of entry."""

    kind = django_filters.ChoiceFilter(
        choices=BalanceTransaction.Kind.choices, label="Kind", empty_label="Any kind"
    )
    created_after = created_before = None


def _text_input(name: str, **attrs) -> forms.TextInput:
    return forms.TextInput(attrs={"maxlength": TEXT_FIELDS[name], **attrs})


class BillingProfileForm(ServiceErrorFormMixin, forms.Form):
    """Who the invoices are made out to. Every field may be left empty; the service checks
    them all at once (``form.changes()`` is what it is given: only what was changed)."""

    legal_name = forms.CharField(
        label="Legal name",
        required=False,
        widget=_text_input("legal_name", autocomplete="organization"),
        help_text="The person or company invoices are made out to; empty: the account's name.",
    )
    email = forms.CharField(
        label="Billing e-mail",
        required=False,
        widget=forms.EmailInput(attrs={"maxlength": TEXT_FIELDS["email"], "autocomplete": "email"}),
        help_text="Printed on invoices.",
    )
    address_line1 = forms.CharField(
        label="Address",
        required=False,
        widget=_text_input("address_line1", autocomplete="address-line1"),
    )
    address_line2 = forms.CharField(
        label="Address, second line",
        required=False,
        widget=_text_input("address_line2", autocomplete="address-line2"),
    )
    postal_code = forms.CharField(
        label="Postal code",
        required=False,
        widget=_text_input("postal_code", autocomplete="postal-code"),
    )
    city = forms.CharField(
        required=False, widget=_text_input("city", autocomplete="address-level2")
    )
    region = forms.CharField(
        label="Region or state",
        required=False,
        widget=_text_input("region", autocomplete="address-level1"),
    )
    country = forms.CharField(
        required=False,
        widget=forms.TextInput(attrs={"autocomplete": "country", "size": 2}),
        help_text="The two-letter ISO code, such as DE or NL. It decides the tax on invoices.",
    )
    vat_id = forms.CharField(
        label="VAT ID",
        required=False,
        widget=forms.TextInput(attrs={"maxlength": VAT_ID_INPUT_LIMIT}),
        help_text="For a business in the EU: checked against the country above; a valid one "
        "from another member state than ours is reverse-charged.",
    )

    @classmethod
    def of(cls, profile: BillingProfile, data=None, *, read_only: bool = False):
        """The form filled with ``profile``; with ``read_only``, shown but not editable."""
        form = cls(data, initial={name: getattr(profile, name) for name in cls.base_fields})
        if read_only:
            for field in form.fields.values():
                field.disabled = True
        return form

    def changes(self) -> dict[str, str]:
        """What was changed: the fields the service is asked to set."""
        return {name: self.cleaned_data[name] for name in self.changed_data}
