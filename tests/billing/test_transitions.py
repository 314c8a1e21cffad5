"""The billing state tables: every status has a row, final states lead nowhere, refusals say why."""

import pytest

from billing import transitions
from billing.models import InvoiceStatus, PaymentStatus, SubscriptionStatus
from hosting.errors import InvalidState


@pytest.mark.parametrize(
    ("table", "choices", "final"),
    [
        (transitions.SUBSCRIPTION_EDGES, SubscriptionStatus, {"canceled"}),
        (transitions.INVOICE_EDGES, InvoiceStatus, {"paid", "void"}),
        # failed is not final: a card payment the customer confirmed after all succeeds late
        (transitions.PAYMENT_EDGES, PaymentStatus, {"refunded"}),
    ],
)
def test_every_status_has_a_row_and_only_final_ones_lead_nowhere(table, choices, final):
    assert set(table) == set(choices.values)
    assert {status for status, targets in table.items() if not targets} == final
    assert all(targets <= set(choices.values) for targets in table.values())


def test_a_paid_invoice_cannot_be_voided_and_the_refusal_names_what_it_may_become():
    with pytest.raises(InvalidState) as refused:
        transitions.check("invoice", "paid", "void", verb="void this invoice")
    assert refused.value.message == "Cannot void this invoice: the invoice is paid."
    assert refused.value.details == {"status": "paid", "allowed_statuses": []}
    transitions.check("invoice", "open", "void")  # an edge: no error


def test_an_unpaid_subscription_becomes_active_again_when_paid():
    transitions.check("subscription", "unpaid", "active")
    with pytest.raises(InvalidState) as refused:
        transitions.check("subscription", "canceled", "active")
    assert refused.value.details["allowed_statuses"] == []
