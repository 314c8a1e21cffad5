"""Billing: the overview, invoices with their PDFs and "pay with credit", credit notes, the
credit ledger and the billing profile; and who may see and do what."""

import io
from datetime import UTC, datetime, timedelta

import pytest
from pypdf import PdfReader

from accounts.actors import SYSTEM
from accounts.roles import Role
from accounts.services import account_suspend
from billing.clock import billing_clock_advance
from billing.models import BalanceTransaction, BillingProfile, Invoice, Payment
from billing.rules.tax import REVERSE_CHARGE_NOTE
from billing.services import (
    balance_change,
    credit_note_create,
    invoice_mark_paid,
    invoice_pay_with_credit,
    invoice_void,
)
from billing.services.payments import payment_failed, payment_open
from events.models import Event
from tests.dashboard import html_id_text, messages_of, signed_in
from tests.factories import InvoiceFactory, MembershipFactory

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PLAN = {
    "description": "Survival SMP, 4 GB",
    "quantity": 1,
    "unit_amount": 1200,
    "period_start": datetime(2026, 3, 1, tzinfo=UTC),
    "period_end": datetime(2026, 4, 1, tzinfo=UTC),
}
BACKUPS = {"description": "Extra backup slots", "quantity": 3, "unit_amount": 50, "tax_amount": 32}
SUSPENDED = "This account is suspended, so its data cannot be changed."
VIEWER_REFUSED = "As Viewer, you may not change subscriptions and payment methods."


@pytest.fixture(autouse=True)
def clock(account):
    """The account's billing runs on a test clock: due dates and "overdue" are fixed."""
    return billing_clock_advance(account=account, to=NOW)


@pytest.fixture
def billing_member(account):
    return MembershipFactory(account=account, role=Role.BILLING).user


@pytest.fixture
def viewer(account):
    return MembershipFactory(account=account, role=Role.VIEWER).user


def issue(account, *lines, finalize=True) -> Invoice:
    return InvoiceFactory(account=account, lines=list(lines) or [PLAN], finalize=finalize)


def credit(account, amount: int) -> BalanceTransaction:
    return balance_change(
        account=account,
        amount=amount,
        currency="EUR",
        kind="adjustment",
        description="Goodwill credit",
        actor=SYSTEM,
    )


def invoice_url(invoice, suffix: str = "") -> str:
    return f"/billing/invoices/{invoice.id}{suffix}"


def pdf_text(content: bytes) -> str:
    reader = PdfReader(io.BytesIO(content))
    return " ".join(" ".join(page.extract_text().split()) for page in reader.pages)


# --- The overview ----------------------------------------------------------------------------


def test_billing_is_in_the_navigation_of_those_who_may_see_it(owner, teammate):
    body = signed_in(owner).get("/billing").content.decode()
    assert '<a href="/billing" aria-current="page">Billing</a>' in body
    assert 'href="/billing"' not in signed_in(teammate).get("/").content.decode()


def test_the_overview_shows_the_balance_and_what_is_to_pay(owner, account):
    credit(account, 500)
    first = issue(account, PLAN | {"unit_amount": 3000})
    billing_clock_advance(account=account, to=NOW + timedelta(days=10))  # the first is overdue
    soon = issue(account, PLAN | {"unit_amount": 400})
    paid = issue(account, PLAN | {"unit_amount": 300})
    invoice_mark_paid(invoice=paid, reference="Transfer 0042", actor=SYSTEM)

    response = signed_in(owner).get("/billing")

    assert response.status_code == 200
    assert html_id_text(response, "credit-balance") == "5.00 EUR"
    rows = [invoice.id for invoice in response.context["invoices"]]
    assert rows == [first.id, soon.id]  # by due date; the paid one is not asked for
    body = response.content.decode()
    first_row = body[body.index(f'id="to-pay-{first.id}"') : body.index(f'id="to-pay-{soon.id}"')]
    assert "30.00 EUR" in first_row and "overdue" in first_row
    assert "Pay 5.00 EUR with credit" in first_row  # the credit covers part of it
    soon_row = body[body.index(f'id="to-pay-{soon.id}"') :]
    assert "Pay with credit</button>" in soon_row and "overdue" not in soon_row.split("</tr>")[0]
    for path in ["/billing/invoices", "/billing/balance", "/billing/profile"]:
        assert f'href="{path}"' in body


def test_without_credit_there_is_no_pay_button(owner, account):
    issue(account)
    response = signed_in(owner).get("/billing")
    assert html_id_text(response, "credit-balance") == "0.00 EUR"  # the invoice fixed EUR
    assert "pay-with-credit" not in response.content.decode()


def test_the_overview_lists_the_ten_due_first_and_links_to_the_rest(owner, account):
    for days in range(11):
        billing_clock_advance(account=account, to=NOW + timedelta(days=days))
        issue(account)
    response = signed_in(owner).get("/billing")
    assert len(response.context["invoices"]) == 10
    assert response.context["invoices"][0].due_date == NOW + timedelta(days=7)
    assert 'href="/billing/invoices?status=open">Every open invoice</a>' in (
        response.content.decode()
    )


def test_an_account_without_any_billing_says_so(owner):
    response = signed_in(owner).get("/billing")
    assert response.status_code == 200
    assert html_id_text(response, "credit-balance") == "None yet"
    assert "Nothing to pay." in response.content.decode()


# --- Invoices list ---------------------------------------------------------------------------


@pytest.fixture
def invoices(account, other_account) -> list[Invoice]:
    """Four invoices of the account (open, paid, void, draft) and one of another account."""
    opened = issue(account, PLAN | {"unit_amount": 2000})
    paid = issue(account, PLAN | {"unit_amount": 500})
    credit(account, 500)
    invoice_pay_with_credit(invoice=paid, actor=SYSTEM)
    voided = invoice_void(invoice=issue(account, PLAN | {"unit_amount": 900}), actor=SYSTEM)
    draft = issue(account, PLAN | {"unit_amount": 100}, finalize=False)
    billing_clock_advance(account=other_account, to=NOW)
    issue(other_account, PLAN | {"unit_amount": 7777})
    return [opened, paid, voided, draft]


def listed(response) -> list[str]:
    return [invoice.id for invoice in response.context["invoices"]]


def test_the_invoices_list_shows_the_account_s_invoices_with_status_badges(owner, invoices):
    opened, draft = invoices[0], invoices[3]
    response = signed_in(owner).get("/billing/invoices")
    assert response.status_code == 200
    assert sorted(listed(response)) == sorted(invoice.id for invoice in invoices)
    body = response.content.decode()
    assert '<span class="badge badge-invoice-open">Open</span>' in body
    assert '<span class="badge badge-invoice-paid">Paid</span>' in body
    assert '<span class="badge badge-invoice-void">Void</span>' in body
    assert '<span class="badge badge-invoice-draft">Draft</span>' in body
    assert opened.number in body and "20.00 EUR" in body
    assert f"Draft <code>{draft.id}</code>" in body  # no number until it is finalized
    assert "77.77 EUR" not in body  # the other account's


def test_the_invoices_list_finds_by_number_and_filters_by_status(owner, invoices):
    opened, paid, voided, _draft = invoices
    client = signed_in(owner)
    assert listed(client.get("/billing/invoices", {"q": paid.number[-6:]})) == [paid.id]
    assert listed(client.get("/billing/invoices", {"q": paid.number.lower()})) == [paid.id]
    assert listed(client.get("/billing/invoices", {"status": "open"})) == [opened.id]
    assert listed(client.get("/billing/invoices", {"status": "void", "q": "INV"})) == [voided.id]
    nothing = client.get("/billing/invoices", {"q": "no-such-number"})
    assert "No invoice matches this search or these filters." in nothing.content.decode()

    wrong = client.get("/billing/invoices", {"status": "refunded"})
    assert wrong.status_code == 200
    assert len(listed(wrong)) == 4
    assert wrong.context["listing"].notices == [
        "The status filter was left out: Select a valid choice. refunded is not one of the "
        "available choices."
    ]


def test_the_invoices_list_sorts_by_created_due_date_or_total(owner, invoices):
    opened, paid, voided, draft = invoices
    client = signed_in(owner)
    assert listed(client.get("/billing/invoices", {"sort": "total"})) == [
        draft.id,
        paid.id,
        voided.id,
        opened.id,
    ]
    assert listed(client.get("/billing/invoices", {"sort": "-total"}))[0] == opened.id
    by_due = listed(client.get("/billing/invoices", {"sort": "due_date"}))
    assert by_due[-1] == draft.id  # no due date: last both ways
    assert listed(client.get("/billing/invoices", {"sort": "-due_date"}))[-1] == draft.id
    unknown = client.get("/billing/invoices", {"sort": "number"})
    assert unknown.context["listing"].notices == [
        "This list cannot be sorted by “number”: it is in its usual order."
    ]


def test_the_invoices_list_pages_with_bounded_queries(
    owner, account, django_assert_max_num_queries
):
    for amount in range(1, 4):
        issue(account, PLAN | {"unit_amount": amount * 100})
    client = signed_in(owner)
    # The session, the user, the membership, the count, the rows, the account (its name).
    with django_assert_max_num_queries(6) as few:
        client.get("/billing/invoices")
    baseline = len(few.captured_queries)
    for amount in range(4, 31):
        issue(account, PLAN | {"unit_amount": amount * 100})
    with django_assert_max_num_queries(baseline):
        first = client.get("/billing/invoices")
    assert len(listed(first)) == 25
    assert 'href="?page=2"' in first.content.decode()
    second = client.get("/billing/invoices", {"page": 2, "sort": "total"})
    assert len(listed(second)) == 5
    assert second.context["page_obj"].number == 2
    past = client.get("/billing/invoices", {"page": 9})
    assert past.context["page_obj"].number == 2
    assert past.context["listing"].notices == ["There is no page 9: this is the last page."]


# --- Payments --------------------------------------------------------------------------------


@pytest.fixture
def payments(account, other_account, teammate) -> list[Payment]:
    """A payment from credit, a bank transfer, a declined card, and another account's."""
    by_credit = issue(account, PLAN | {"unit_amount": 500})
    credit(account, 500)
    invoice_pay_with_credit(invoice=by_credit, actor=SYSTEM)
    billing_clock_advance(account=account, to=NOW + timedelta(hours=1))
    by_transfer = invoice_mark_paid(
        invoice=issue(account, PLAN | {"unit_amount": 2500}),
        reference="Transfer 0042",
        actor=SYSTEM,
    )
    billing_clock_advance(account=account, to=NOW + timedelta(hours=2))
    declined = payment_open(
        invoice=issue(account, PLAN | {"unit_amount": 1800}),
        gateway="stripe",
        reference="Visa •••• 0341 (12/2034)",
    )
    payment_failed(declined, message="Your card was declined.")
    billing_clock_advance(account=other_account, to=NOW)
    theirs = issue(other_account, PLAN | {"unit_amount": 7777})
    invoice_mark_paid(invoice=theirs, reference="Theirs", actor=SYSTEM)
    return [
        Payment.objects.get(invoice=by_credit),
        Payment.objects.get(invoice=by_transfer),
        Payment.objects.get(pk=declined.pk),
    ]


def test_a_known_payment_failure_is_shown_in_the_readers_language(owner, payments):
    """A payment's failure message is stored (and answered by the API) in English; a message
    of ours is shown in the reader's language, a gateway's own text as it came."""
    declined = payments[2]
    Payment.objects.filter(pk=declined.pk).update(failure_message="The card was declined.")
    owner.language = "de"
    owner.save(update_fields=["language"])
    body = signed_in(owner).get("/billing/payments").content.decode()
    row = body[body.index(f'id="payment-{declined.id}"') :].split("</tr>")[0]
    assert "Die Karte wurde abgelehnt." in row
    Payment.objects.filter(pk=declined.pk).update(failure_message="Insufficient funds (code 51).")
    body = signed_in(owner).get("/billing/payments").content.decode()
    assert "Insufficient funds (code 51)." in body


def paid_by(response) -> list[str]:
    return [payment.id for payment in response.context["payments"]]


def test_the_payments_list_is_the_account_s_history_newest_first(owner, payments):
    by_credit, by_transfer, declined = payments
    response = signed_in(owner).get("/billing/payments")

    assert response.status_code == 200
    assert paid_by(response) == [declined.id, by_transfer.id, by_credit.id]
    body = response.content.decode()
    row = body[body.index(f'id="payment-{declined.id}"') :].split("</tr>")[0]
    assert "Card" in row and "Visa •••• 0341 (12/2034)" in row and "Your card was declined." in row
    assert '<span class="badge badge-failed">Failed</span>' in row and "18.00 EUR" in row
    assert f'href="/billing/invoices/{declined.invoice_id}"' in row
    assert "Account credit" in body and "Transfer 0042" in body
    assert "77.77 EUR" not in body and "Theirs" not in body  # the other account's
    assert 'href="/billing/payments" aria-current="page"' in body


def test_the_payments_list_finds_filters_and_sorts(owner, payments):
    by_credit, by_transfer, declined = payments
    client = signed_in(owner)

    assert paid_by(client.get("/billing/payments", {"q": "transfer 0042"})) == [by_transfer.id]
    number = by_credit.invoice.number
    assert paid_by(client.get("/billing/payments", {"q": number})) == [by_credit.id]
    assert paid_by(client.get("/billing/payments", {"status": "failed"})) == [declined.id]
    assert paid_by(client.get("/billing/payments", {"gateway": "credit"})) == [by_credit.id]
    assert paid_by(client.get("/billing/payments", {"sort": "-amount"})) == [
        by_transfer.id,
        declined.id,
        by_credit.id,
    ]
    nothing = client.get("/billing/payments", {"gateway": "stripe", "status": "succeeded"})
    assert "No payment matches this search or these filters." in nothing.content.decode()


def test_the_payments_list_pages_with_bounded_queries(
    owner, account, django_assert_max_num_queries
):
    client = signed_in(owner)
    for amount in range(1, 4):
        invoice_mark_paid(
            invoice=issue(account, PLAN | {"unit_amount": amount * 100}),
            reference=f"T{amount}",
            actor=SYSTEM,
        )
    with django_assert_max_num_queries(7) as few:
        client.get("/billing/payments")
    for amount in range(4, 31):
        invoice_mark_paid(
            invoice=issue(account, PLAN | {"unit_amount": amount * 100}),
            reference=f"T{amount}",
            actor=SYSTEM,
        )
    with django_assert_max_num_queries(len(few.captured_queries)):
        first = client.get("/billing/payments")
    assert len(paid_by(first)) == 25 and 'href="?page=2"' in first.content.decode()


def test_only_those_who_see_billing_see_the_payments(teammate, outsider, payments):
    assert signed_in(teammate).get("/billing/payments").status_code == 403
    theirs = paid_by(signed_in(outsider).get("/billing/payments"))  # their own account's
    assert len(theirs) == 1 and theirs[0] not in {payment.id for payment in payments}


# --- One invoice -----------------------------------------------------------------------------


def test_an_invoice_shows_its_lines_totals_parties_and_notes(owner, account, settings):
    BillingProfile.objects.create(
        account=account,
        legal_name="Blockworks GmbH",
        address_line1="Hauptstraße 5",
        postal_code="10115",
        city="Berlin",
        country="DE",
        vat_id="DE136695976",
    )
    invoice = issue(account, PLAN, BACKUPS)
    Invoice.objects.filter(pk=invoice.pk).update(notes=["Reverse charge: VAT to be accounted."])

    response = signed_in(owner).get(invoice_url(invoice))

    assert response.status_code == 200
    body = response.content.decode()
    assert f"Invoice {invoice.number}" in body
    lines = html_id_text(response, "invoice-lines")
    assert "Survival SMP, 4 GB" in lines and "2026-03-01 \N{EN DASH} 2026-04-01" in lines
    assert "Extra backup slots" in lines and "0.50 EUR" in lines and "1.50 EUR" in lines
    assert "0.32 EUR" in lines
    totals = html_id_text(response, "invoice-totals")
    assert "13.50 EUR" in totals  # subtotal
    assert "13.82 EUR" in totals  # total with the tax added
    seller = html_id_text(response, "invoice-seller")
    assert settings.BILLING_SELLER["name"] in seller
    buyer = html_id_text(response, "invoice-buyer")
    assert "Blockworks GmbH" in buyer and "Hauptstraße 5" in buyer and "DE136695976" in buyer
    assert "Reverse charge: VAT to be accounted." in html_id_text(response, "invoice-notes")
    assert f'href="{invoice_url(invoice, "/pdf")}"' in body


def test_an_invoices_known_notes_are_shown_in_the_readers_language(owner, account):
    """The reverse-charge note is stored in English (the invoice's record) and shown, on the
    page and in its PDF, in the reader's language; a note the catalogue does not know is shown
    as written."""
    invoice = issue(account)
    Invoice.objects.filter(pk=invoice.pk).update(notes=[REVERSE_CHARGE_NOTE, "Paid by wire."])
    owner.language = "de"
    owner.save(update_fields=["language"])
    client = signed_in(owner)

    notes = html_id_text(client.get(invoice_url(invoice)), "invoice-notes")
    pdf = client.get(invoice_url(invoice, "/pdf"))
    pdf_text = " ".join(
        page.extract_text() for page in PdfReader(io.BytesIO(pdf.content)).pages
    ).replace("\n", " ")

    assert "Steuerschuldnerschaft" in notes and "Reverse charge" not in notes
    assert "Paid by wire." in notes
    assert "Steuerschuldnerschaft" in pdf_text


def test_an_invoice_lists_its_payments_and_credit_notes(owner, account):
    invoice = issue(account)
    credit(account, 1200)
    client = signed_in(owner)
    client.post(invoice_url(invoice, "/pay"))
    note = credit_note_create(
        invoice=invoice,
        amount=200,
        reason="product_unsatisfactory",
        refund_to="balance",
        memo="Two days of downtime",
        actor=SYSTEM,
    )

    response = client.get(invoice_url(invoice))

    payments = html_id_text(response, "invoice-payments")
    assert "Account credit" in payments and "12.00 EUR" in payments and "Succeeded" in payments
    body = response.content.decode()
    assert f'id="credit-note-{note.id}"' in body
    assert note.number in body and "Two days of downtime" in body and "Customer balance" in body
    assert f'href="/billing/credit-notes/{note.id}/pdf"' in body


def test_a_draft_has_no_number_and_no_pdf(owner, account):
    draft = issue(account, finalize=False)
    client = signed_in(owner)
    body = client.get(invoice_url(draft)).content.decode()
    assert "Draft invoice" in body and 'id="download-pdf"' not in body
    response = client.get(invoice_url(draft, "/pdf"), follow=True)
    assert response.redirect_chain == [(invoice_url(draft), 302)]
    assert messages_of(response) == [
        "A draft invoice has no PDF yet: it gets its number and its PDF when it is finalized."
    ]


# --- Paying with credit ----------------------------------------------------------------------


def test_paying_with_credit_pays_the_invoice_and_writes_the_ledger(owner, account):
    invoice = issue(account)
    credit(account, 2000)
    client = signed_in(owner)
    assert 'class="button button-primary pay-with-credit">Pay with credit<' in (
        client.get(invoice_url(invoice)).content.decode()
    )

    response = client.post(invoice_url(invoice, "/pay"), follow=True)

    assert response.redirect_chain == [(invoice_url(invoice), 302)]
    assert messages_of(response) == [f"Invoice {invoice.number} is paid with your credit."]
    invoice.refresh_from_db()
    assert (invoice.status, invoice.amount_paid, invoice.amount_remaining) == ("paid", 1200, 0)
    entry = BalanceTransaction.objects.get(account=account, kind="applied_to_invoice")
    assert (entry.amount, entry.ending_balance) == (-1200, 800)
    assert entry.invoice_id == invoice.id and entry.created_by_id == owner.id
    payment = Payment.objects.get(invoice=invoice)
    assert (payment.gateway, payment.status, payment.amount) == ("credit", "succeeded", 1200)
    types = set(
        Event.objects.filter(account=account, actor_user=owner).values_list("type", flat=True)
    )
    assert {"invoice.paid", "payment.succeeded", "customer.balance_changed"} <= types
    assert "pay-with-credit" not in response.content.decode()


def test_credit_that_covers_part_pays_part(owner, account):
    invoice = issue(account)
    credit(account, 500)
    response = signed_in(owner).post(invoice_url(invoice, "/pay"), follow=True)
    assert messages_of(response) == [
        f"Your credit paid part of invoice {invoice.number}; 7.00 EUR remains to be paid."
    ]
    invoice.refresh_from_db()
    assert (invoice.status, invoice.amount_remaining) == ("open", 700)


def test_a_refused_payment_is_said_as_a_message(owner, account):
    invoice = issue(account)
    response = signed_in(owner).post(invoice_url(invoice, "/pay"), follow=True)
    assert response.redirect_chain == [(invoice_url(invoice), 302)]
    assert messages_of(response) == ["The account has no credit to pay with."]
    credit(account, 5000)
    voided = invoice_void(invoice=issue(account), actor=SYSTEM)
    response = signed_in(owner).post(invoice_url(voided, "/pay"), follow=True)
    assert messages_of(response) == ["Cannot pay this invoice: the invoice is void."]
    assert not Payment.objects.exists()


def test_paying_is_a_post(owner, account):
    invoice = issue(account)
    assert signed_in(owner).get(invoice_url(invoice, "/pay")).status_code == 405


# --- PDFs ------------------------------------------------------------------------------------


def test_the_invoice_pdf_downloads_and_reads_back(owner, account):
    invoice = issue(account, PLAN, BACKUPS)
    response = signed_in(owner).get(invoice_url(invoice, "/pdf"))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == f'attachment; filename="{invoice.number}.pdf"'
    assert "private" in response["Cache-Control"]
    text = pdf_text(response.content)
    assert invoice.number in text
    assert "Survival SMP, 4 GB" in text and "Extra backup slots" in text
    assert "Total 13.82 EUR" in text


def test_the_credit_note_pdf_downloads_and_reads_back(billing_member, account):
    invoice = issue(account)
    note = credit_note_create(
        invoice=invoice, amount=300, reason="order_change", refund_to="none", actor=SYSTEM
    )
    response = signed_in(billing_member).get(f"/billing/credit-notes/{note.id}/pdf")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"
    text = pdf_text(response.content)
    assert note.number in text and f"Credit on invoice {invoice.number}" in text
    assert "Total credited 3.00 EUR" in text


# --- The credit ledger -----------------------------------------------------------------------


def test_the_balance_lists_entries_newest_first_naming_their_cause(owner, account):
    invoice = issue(account)
    credit(account, 2000)
    billing_clock_advance(account=account, to=NOW + timedelta(hours=1))
    signed_in(owner).post(invoice_url(invoice, "/pay"))
    billing_clock_advance(account=account, to=NOW + timedelta(hours=2))
    note = credit_note_create(
        invoice=invoice, amount=200, reason="order_change", refund_to="balance", actor=SYSTEM
    )

    response = signed_in(owner).get("/billing/balance")

    assert response.status_code == 200
    assert html_id_text(response, "credit-balance") == "10.00 EUR"
    entries = response.context["entries"]
    assert [entry.kind for entry in entries] == ["credit_note", "applied_to_invoice", "adjustment"]
    body = response.content.decode()
    assert f'<a href="/billing/invoices/{invoice.id}">Invoice {invoice.number}</a>' in body
    assert f"Credit note {note.number}" in body
    assert f'href="/billing/credit-notes/{note.id}/pdf"' in body
    assert "+2.00 EUR" in body and "-12.00 EUR" in body and "+20.00 EUR" in body


def test_the_balance_filters_by_kind_and_pages(owner, account, django_assert_max_num_queries):
    for _ in range(3):
        credit(account, 100)
    client = signed_in(owner)
    # The invoices page's six, then the balance and the profile (its currency) for the header.
    with django_assert_max_num_queries(8) as few:
        client.get("/billing/balance")
    baseline = len(few.captured_queries)  # read now: the next request empties the log
    for _ in range(27):
        credit(account, 100)
    invoice = issue(account)
    client.post(invoice_url(invoice, "/pay"))
    with django_assert_max_num_queries(baseline):
        first = client.get("/billing/balance")
    assert len(first.context["entries"]) == 25
    assert first.context["page_obj"].paginator.count == 31
    applied = client.get("/billing/balance", {"kind": "applied_to_invoice"})
    assert [entry.invoice_id for entry in applied.context["entries"]] == [invoice.id]
    found = client.get("/billing/balance", {"q": invoice.number})
    assert [entry.kind for entry in found.context["entries"]] == ["applied_to_invoice"]
    second = client.get("/billing/balance", {"kind": "adjustment", "page": "2"})
    assert len(second.context["entries"]) == 5


# --- The billing profile ---------------------------------------------------------------------

PROFILE = {
    "legal_name": "Blockworks GmbH",
    "email": "accounts@blockworks.example",
    "address_line1": "Hauptstraße 5",
    "address_line2": "",
    "postal_code": "10115",
    "city": "Berlin",
    "region": "",
    "country": "de",
    "vat_id": "DE 136 695 976",
}


def test_saving_the_profile_goes_through_the_service(owner, account):
    client = signed_in(owner)
    page = client.get("/billing/profile").content.decode()
    assert "Not exempt" in page and "set by staff" in page
    assert "Not chosen yet" in page and "fixed by your first invoice" in page

    response = client.post("/billing/profile", PROFILE, follow=True)

    assert response.redirect_chain == [("/billing/profile", 302)]
    assert messages_of(response) == [
        "Saved the billing profile: invoices finalized from now on show it."
    ]
    profile = BillingProfile.objects.get(account=account)
    assert (profile.legal_name, profile.city, profile.country, profile.vat_id) == (
        "Blockworks GmbH",
        "Berlin",
        "DE",
        "DE136695976",
    )
    event = Event.objects.get(type="customer.billing_profile_updated")
    assert event.actor_user_id == owner.id
    assert 'value="Blockworks GmbH"' in response.content.decode()


def test_an_unchanged_profile_is_not_saved_again(owner, account):
    client = signed_in(owner)
    client.post("/billing/profile", PROFILE, follow=True)
    stored = PROFILE | {"country": "DE", "vat_id": "DE136695976"}  # as the service keeps them
    response = client.post("/billing/profile", stored, follow=True)
    assert messages_of(response) == ["Nothing was changed."]
    assert Event.objects.filter(type="customer.billing_profile_updated").count() == 1


def test_profile_errors_are_shown_next_to_their_fields_and_what_was_typed_is_kept(owner, account):
    response = signed_in(owner).post(
        "/billing/profile",
        PROFILE | {"email": "not-an-address", "country": "Germany", "vat_id": "DE123"},
    )
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert errors["email"] == ["Enter a valid e-mail address."]
    assert errors["country"] == ["Ensure this field has no more than 2 characters."]
    assert errors["vat_id"] == ["Set the country a VAT id belongs to."]
    body = response.content.decode()
    assert 'value="not-an-address"' in body and 'value="Blockworks GmbH"' in body
    assert not BillingProfile.objects.filter(account=account, legal_name="Blockworks GmbH").exists()


def test_a_vat_id_that_does_not_fit_the_country_is_said_next_to_it(owner, account):
    response = signed_in(owner).post("/billing/profile", PROFILE | {"vat_id": "DE123"})
    assert response.status_code == 200
    assert list(response.context["form"].errors) == ["vat_id"]
    assert 'class="field field-invalid"' in response.content.decode()


def test_the_tax_exemption_and_currency_are_shown_read_only(owner, account):
    BillingProfile.objects.create(account=account, tax_exempt=True, currency="EUR")
    client = signed_in(owner)
    body = client.get("/billing/profile").content.decode()
    assert "Exempt from tax" in body and "EUR" in body
    assert 'name="tax_exempt"' not in body and 'name="currency"' not in body
    client.post("/billing/profile", PROFILE | {"tax_exempt": "", "currency": "USD"})
    profile = BillingProfile.objects.get(account=account)
    assert (profile.tax_exempt, profile.currency) == (True, "EUR")


# --- Who may see and do what ------------------------------------------------------------------

PAGES = ["/billing", "/billing/invoices", "/billing/balance", "/billing/profile"]


@pytest.mark.parametrize("role", [Role.BILLING, Role.ADMIN])
def test_billing_members_and_admins_see_and_pay(account, role):
    invoice = issue(account)
    credit(account, 1200)
    client = signed_in(MembershipFactory(account=account, role=role).user)
    for path in [*PAGES, invoice_url(invoice)]:
        assert client.get(path).status_code == 200, path
    assert client.get(invoice_url(invoice, "/pdf")).status_code == 200
    client.post(invoice_url(invoice, "/pay"))
    invoice.refresh_from_db()
    assert invoice.status == "paid"
    assert client.post("/billing/profile", PROFILE).status_code == 302
    assert BillingProfile.objects.get(account=account).legal_name == "Blockworks GmbH"


@pytest.mark.parametrize("role", [Role.DEVELOPER, Role.SUPPORT])
def test_roles_without_billing_are_told_their_role_does_not_open_it_and_no_navigation_entry(
    account, role
):
    invoice = issue(account)
    credit(account, 1200)
    note = credit_note_create(
        invoice=invoice, amount=100, reason="other", refund_to="none", actor=SYSTEM
    )
    client = signed_in(MembershipFactory(account=account, role=role).user)
    for path in [
        *PAGES,
        invoice_url(invoice),
        invoice_url(invoice, "/pdf"),
        f"/billing/credit-notes/{note.id}/pdf",
    ]:
        assert client.get(path).status_code == 403, path
    assert client.post(invoice_url(invoice, "/pay")).status_code == 403
    assert client.post("/billing/profile", PROFILE).status_code == 403
    invoice.refresh_from_db()
    assert invoice.status == "open"
    assert not BillingProfile.objects.filter(account=account, legal_name__gt="").exists()
    assert 'href="/billing"' not in client.get("/").content.decode()


def test_an_outsider_gets_404_for_every_invoice_and_credit_note(outsider, account):
    invoice = issue(account)
    credit(account, 5000)
    note = credit_note_create(
        invoice=invoice, amount=100, reason="other", refund_to="none", actor=SYSTEM
    )
    client = signed_in(outsider)
    for path in [
        invoice_url(invoice),
        invoice_url(invoice, "/pdf"),
        f"/billing/credit-notes/{note.id}/pdf",
    ]:
        assert client.get(path).status_code == 404, path
    assert client.post(invoice_url(invoice, "/pay")).status_code == 404
    invoice.refresh_from_db()
    assert invoice.status == "open" and not Payment.objects.exists()
    # Their own pages show none of it.
    body = "".join(client.get(path).content.decode() for path in PAGES)
    assert invoice.number not in body and "50.00 EUR" not in body


def test_a_viewer_reads_but_cannot_pay_or_change_the_profile(viewer, account):
    invoice = issue(account)
    credit(account, 5000)
    client = signed_in(viewer)
    body = "".join(client.get(path).content.decode() for path in [*PAGES, invoice_url(invoice)])
    assert invoice.number in body
    assert "pay-with-credit" not in body and 'id="save-billing-profile"' not in body
    assert "you may read the billing profile but not change it" in body

    response = client.post(invoice_url(invoice, "/pay"), follow=True)
    assert response.redirect_chain == [(invoice_url(invoice), 302)]
    assert messages_of(response) == [VIEWER_REFUSED]
    response = client.post("/billing/profile", PROFILE, follow=True)
    assert messages_of(response) == [VIEWER_REFUSED]
    invoice.refresh_from_db()
    assert invoice.status == "open"
    assert not BillingProfile.objects.filter(account=account, legal_name__gt="").exists()


def test_a_suspended_account_reads_its_billing_but_changes_nothing(owner, account):
    invoice = issue(account)
    credit(account, 5000)
    account_suspend(account=account, reason="Terms of service", actor=SYSTEM)
    client = signed_in(owner)
    body = "".join(client.get(path).content.decode() for path in [*PAGES, invoice_url(invoice)])
    assert "This account is suspended" in body and invoice.number in body
    assert "pay-with-credit" not in body and 'id="save-billing-profile"' not in body
    for path in [invoice_url(invoice, "/pay"), "/billing/profile"]:
        response = client.post(path, PROFILE, follow=True)
        assert messages_of(response) == [SUSPENDED], path
    invoice.refresh_from_db()
    assert invoice.status == "open"


def test_a_page_the_role_does_not_open_says_which_roles_do_and_whom_to_ask(account, owner):
    """Issue 34: missing rights used to look like missing pages (the 404 page)."""
    support = MembershipFactory(account=account, role=Role.SUPPORT).user
    answer = signed_in(support).get("/billing/invoices")
    body = answer.content.decode()
    assert answer.status_code == 403 and 'id="not-allowed"' in body
    assert "“Read plans, subscriptions, invoices and payments”" in body  # the label as written
    for role in ("Owner", "Admin", "Billing"):
        assert f"<strong>{role}</strong>" in body
    assert "You are <strong>Support</strong>" in body and owner.email in body
    activity = signed_in(support).get("/settings/activity").content.decode()
    assert "read the account&#x27;s activity log" in activity or "activity log" in activity
