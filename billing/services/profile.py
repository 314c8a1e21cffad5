"""The billing profile: who an account's invoices are made out to.

Finalizing an invoice copies the profile onto it, so a change here reaches only invoices
finalized afterwards. The currency is not set here: the account's first invoice fixes it.
"""

from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction

from accounts.actors import Actor
from accounts.models import Account
from billing.models import BillingProfile
from billing.representations import billing_profile_representation
from billing.services.gateways import GATEWAYS
from billing.tax import InvalidVatId, is_country, subdivision_code, vat_id_check
from events.services import changed_attributes, record_event
from hosting.errors import ValidationFailed

# Text fields a customer sets, with the longest value each takes (the model's columns).
TEXT_FIELDS: dict[str, int] = {
    "legal_name": 200,
    "email": 254,
    "address_line1": 200,
    "address_line2": 200,
    "postal_code": 20,
    "city": 100,
    "region": 100,
}
EDITABLE_FIELDS = frozenset({*TEXT_FIELDS, "country", "vat_id", "tax_exempt", "payment_gateways"})
STAFF_ONLY_FIELDS = frozenset({"tax_exempt", "payment_gateways"})
# As typed, separators included ("DE 136.695.976"); stored compact, well within the column.
VAT_ID_INPUT_LIMIT = 64


@transaction.atomic
def billing_profile_update(
    *, account: Account, changes: dict[str, Any], actor: Actor, staff: bool = False
) -> BillingProfile:
    """Change the account's billing profile: ``legal_name``, ``email``, the address
    (``address_line1``, ``address_line2``, ``postal_code``, ``city``, ``region``, ``country``
    as an ISO 3166-1 alpha-2 code), ``vat_id`` (checked offline against the country and
    stored in its normalized form) and, for staff only, ``tax_exempt`` and
    ``payment_gateways`` (the account's own gateways in collection order, each one this
    service has, none twice; an empty list: the service's ``BILLING_GATEWAYS``). A region
    that reads as a subdivision of the country is stored as its ISO 3166-2 code (``ny`` in
    the US is ``US-NY``, as tax rates name it: ``billing.tax.subdivision_code``); other text
    as typed.

    Every invalid field is named at once (400 ``validation_failed``); nothing is saved then.
    A change records ``customer.billing_profile_updated`` with the previous values.
    """
    profile, _ = BillingProfile.objects.get_or_create(account=account)
    profile = BillingProfile.objects.select_for_update().get(pk=profile.pk)
    before = billing_profile_representation(profile)
    problems: list[tuple[str, str, str]] = []
    for field in sorted(set(changes) - EDITABLE_FIELDS):
        if field == "currency":
            problems.append(
                (field, "read_only", "The billing currency is fixed by the first invoice.")
            )
        else:
            problems.append((field, "unknown_field", "This field is not accepted here."))
    if not staff:
        for field in sorted(STAFF_ONLY_FIELDS & set(changes)):
            problems.append((field, "staff_only", "Only the hosting company's staff set this."))
    for field, limit in TEXT_FIELDS.items():
        if field in changes:
            value, problem = _text(changes[field], limit)
            if problem:
                problems.append((field, *problem))
            elif field == "email" and value and not _is_email(value):
                problems.append((field, "invalid", "Enter a valid e-mail address."))
            else:
                setattr(profile, field, value)
    if "country" in changes:
        country, problem = _text(changes["country"], 2)
        country = country.upper()
        if problem is None and country and not is_country(country):
            problem = ("invalid", "A country is its two-letter ISO 3166-1 code, such as DE.")
        if problem:
            problems.append(("country", *problem))
        else:
            profile.country = country
    if ("region" in changes or "country" in changes) and profile.region:
        profile.region = subdivision_code(profile.region, profile.country) or profile.region
    if "vat_id" in changes or ("country" in changes and profile.vat_id):
        # A new VAT id, or the one on file under a new country: either must fit the country.
        vat_id, problem = _text(changes.get("vat_id", profile.vat_id), VAT_ID_INPUT_LIMIT)
        if problem is None and vat_id:
            vat_id, problem = _vat_id(vat_id, profile.country)
        if problem:
            problems.append(("vat_id", *problem))
        else:
            profile.vat_id = vat_id
    if "tax_exempt" in changes and staff:
        if isinstance(changes["tax_exempt"], bool):
            profile.tax_exempt = changes["tax_exempt"]
        else:
            problems.append(("tax_exempt", "invalid", "Must be true or false."))
    if "payment_gateways" in changes and staff:
        names, problem = _gateway_names(changes["payment_gateways"])
        if problem:
            problems.append(("payment_gateways", *problem))
        else:
            profile.payment_gateways = names
    if problems:
        fields = [{"name": name, "code": code, "message": text} for name, code, text in problems]
        raise ValidationFailed(problems[0][2], details={"fields": fields})
    previous = changed_attributes(before, billing_profile_representation(profile))
    previous.pop("updated_at", None)
    if previous:
        profile.save()
        record_event(
            type="customer.billing_profile_updated",
            account=account,
            object_type="billing_profile",
            obj=billing_profile_representation(profile),
            actor=actor,
            previous_attributes=previous,
        )
    return profile


def _gateway_names(value: Any) -> tuple[list[str], tuple[str, str] | None]:
    """``value`` as a list of gateway names, or the problem with it."""
    if not isinstance(value, list) or not all(isinstance(each, str) for each in value):
        return [], ("invalid", "Must be a list of gateway names.")
    unknown = [each for each in value if each not in GATEWAYS]
    if unknown:
        offered = ", ".join(sorted(GATEWAYS))
        return [], ("invalid", f"No gateway {unknown[0]!r} here; this service has {offered}.")
    if len(set(value)) != len(value):
        return [], ("invalid", "Name each gateway once.")
    return value, None


def _text(value: Any, limit: int) -> tuple[str, tuple[str, str] | None]:
    """``value`` trimmed, or the problem with it."""
    if not isinstance(value, str):
        return "", ("invalid", "Must be a string.")
    value = value.strip()
    if len(value) > limit:
        return value, ("max_length", f"Ensure this field has no more than {limit} characters.")
    return value, None


def _is_email(value: str) -> bool:
    try:
        validate_email(value)
    except ValidationError:
        return False
    return True


def _vat_id(vat_id: str, country: str) -> tuple[str, tuple[str, str] | None]:
    """The VAT id normalized for ``country``, or the problem with it."""
    if not country:
        return vat_id, ("country_required", "Set the country a VAT id belongs to.")
    try:
        return vat_id_check(vat_id, country), None
    except InvalidVatId as invalid:
        return vat_id, (invalid.code, str(invalid))
