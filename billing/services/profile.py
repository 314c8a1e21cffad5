"""The billing profile: who an account's invoices are made out to.

Finalizing an invoice copies the profile onto it, so a change here reaches only invoices
finalized afterwards. The currency is not set here: the account's first invoice fixes it.
"""

from dataclasses import dataclass

from django.db import transaction
from django.utils.translation import gettext as _

from accounts.actors import Actor
from accounts.models import Account
from billing.models import BillingProfile
from billing.representations import billing_profile_representation
from billing.rules.tax import InvalidVatId, is_country, subdivision_code, vat_id_check
from billing.services.gateways import GATEWAYS
from events.services import changed_attributes, record_event
from hosting.changes import UNSET, Changes, Unset
from hosting.errors import ValidationFailed

# Text fields a customer sets, with the longest value each takes (the model's columns): the
# readers (the API's bodies, the dashboard's form) hold values to them.
TEXT_FIELDS: dict[str, int] = {
    "legal_name": 200,
    "email": 254,
    "address_line1": 200,
    "address_line2": 200,
    "postal_code": 20,
    "city": 100,
    "region": 100,
}
STAFF_ONLY_FIELDS = frozenset({"tax_exempt", "payment_gateways"})
# As typed, separators included ("DE 136.695.976"); stored compact, well within the column.
VAT_ID_INPUT_LIMIT = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class BillingProfileChanges(Changes):
    """What one edit of a billing profile sets, as its readers (the API's bodies, the dashboard's
    form, the admin's) have already checked it: text within its column (``TEXT_FIELDS``; a VAT
    id within ``VAT_ID_INPUT_LIMIT``, a country of at most two characters), an e-mail address
    that reads as one, the gateways a list of names. Empty text clears a field. What needs the
    profile, the country or the actor to decide (a real country, the region's code, the VAT id
    against the country, who may set ``tax_exempt`` and ``payment_gateways``, which gateways
    this service has) is ``billing_profile_update``'s. The currency is not among them: the
    first invoice fixes it.
    """

    legal_name: str | Unset = UNSET
    email: str | Unset = UNSET
    address_line1: str | Unset = UNSET
    address_line2: str | Unset = UNSET
    postal_code: str | Unset = UNSET
    city: str | Unset = UNSET
    region: str | Unset = UNSET
    country: str | Unset = UNSET
    vat_id: str | Unset = UNSET
    tax_exempt: bool | Unset = UNSET
    payment_gateways: list[str] | Unset = UNSET


@transaction.atomic
def billing_profile_update(
    *, account: Account, changes: BillingProfileChanges, actor: Actor, staff: bool = False
) -> BillingProfile:
    """Change the account's billing profile: ``legal_name``, ``email``, the address
    (``address_line1``, ``address_line2``, ``postal_code``, ``city``, ``region``, ``country``
    as an ISO 3166-1 alpha-2 code, in any case), ``vat_id`` (checked offline against the
    country and stored in its normalized form) and, for staff only, ``tax_exempt`` and
    ``payment_gateways`` (the account's own gateways in collection order, each one this
    service has, none twice; an empty list: the service's ``BILLING_GATEWAYS``). Text is
    stored trimmed. A region that reads as a subdivision of the country is stored as its ISO
    3166-2 code (``ny`` in the US is ``US-NY``, as tax rates name it:
    ``billing.rules.tax.subdivision_code``); other text as typed.

    Every invalid field is named at once (400 ``validation_failed``); nothing is saved then.
    A change records ``customer.billing_profile_updated`` with the previous values.
    """
    profile, _created = BillingProfile.objects.get_or_create(account=account)
    profile = BillingProfile.objects.select_for_update().get(pk=profile.pk)
    before = billing_profile_representation(profile)
    _refuse(_changes_set(profile, changes, staff))
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


def billing_profile_check(
    *, account: Account, changes: BillingProfileChanges, staff: bool = False
) -> None:
    """Refuse what ``billing_profile_update`` would refuse of ``changes``, every field named
    (400 ``validation_failed``), and change nothing: for a form that refused some fields
    itself, so that the person sees the rules' refusals of the others at once."""
    profile = BillingProfile.objects.filter(account=account).first()
    _refuse(_changes_set(profile or BillingProfile(account=account), changes, staff))


Problem = tuple[str, str, str]  # the field's name, the code, the message


def _changes_set(
    profile: BillingProfile, changes: BillingProfileChanges, staff: bool
) -> list[Problem]:
    """``changes`` set on ``profile`` (not saved); what the rules refuse of them."""
    return [
        *_staff_only_problems(changes, staff),
        *_address_set(profile, changes),
        *_vat_id_set(profile, changes),
        *(_staff_fields_set(profile, changes) if staff else []),
    ]


def _refuse(problems: list[Problem]) -> None:
    if problems:
        fields = [{"name": name, "code": code, "message": text} for name, code, text in problems]
        raise ValidationFailed(problems[0][2], details={"fields": fields})


def _staff_only_problems(changes: BillingProfileChanges, staff: bool) -> list[Problem]:
    if staff:
        return []
    message = _("Only the hosting company's staff set this.")
    return [(name, "staff_only", message) for name in sorted(STAFF_ONLY_FIELDS) if name in changes]


def _address_set(profile: BillingProfile, changes: BillingProfileChanges) -> list[Problem]:
    """The text fields and the country set on ``profile``; the region read again as a
    subdivision of the (new) country."""
    for name in TEXT_FIELDS:
        if not isinstance(value := getattr(changes, name), Unset):
            setattr(profile, name, value.strip())
    problems = []
    if not isinstance(changes.country, Unset):
        country = changes.country.strip().upper()
        if country and not is_country(country):
            message = _("A country is its two-letter ISO 3166-1 code, such as DE.")
            problems.append(("country", "invalid", message))
        else:
            profile.country = country
    if ("region" in changes or "country" in changes) and profile.region:
        profile.region = subdivision_code(profile.region, profile.country) or profile.region
    return problems


def _vat_id_set(profile: BillingProfile, changes: BillingProfileChanges) -> list[Problem]:
    """A new VAT id, or the one on file under a new country: either must fit the country."""
    if isinstance(changes.vat_id, Unset) and not ("country" in changes and profile.vat_id):
        return []
    vat_id = profile.vat_id if isinstance(changes.vat_id, Unset) else changes.vat_id.strip()
    problem = None
    if vat_id:
        vat_id, problem = _vat_id(vat_id, profile.country)
    if problem:
        return [("vat_id", *problem)]
    profile.vat_id = vat_id
    return []


def _staff_fields_set(profile: BillingProfile, changes: BillingProfileChanges) -> list[Problem]:
    if not isinstance(changes.tax_exempt, Unset):
        profile.tax_exempt = changes.tax_exempt
    if isinstance(changes.payment_gateways, Unset):
        return []
    if problem := _gateways_problem(changes.payment_gateways):
        return [("payment_gateways", "invalid", problem)]
    profile.payment_gateways = changes.payment_gateways
    return []


def _gateways_problem(names: list[str]) -> str | None:
    """What is wrong with ``names`` as the account's gateways, if anything."""
    unknown = [each for each in names if each not in GATEWAYS]
    if unknown:
        offered = ", ".join(sorted(GATEWAYS))
        return f"No gateway {unknown[0]!r} here; this service has {offered}."
    if len(set(names)) != len(names):
        return "Name each gateway once."
    return None


def _vat_id(vat_id: str, country: str) -> tuple[str, tuple[str, str] | None]:
    """The VAT id normalized for ``country``, or the problem with it."""
    if not country:
        return vat_id, ("country_required", _("Set the country a VAT id belongs to."))
    try:
        return vat_id_check(vat_id, country), None
    except InvalidVatId as invalid:
        return vat_id, (invalid.code, _(invalid.template) % invalid.params)
