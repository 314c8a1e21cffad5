"""The one mapping from a service's refusal to what a person sees (hosting/dashboard/refusals)."""

import pytest
from django import forms
from django.contrib.messages import get_messages
from django.contrib.messages.storage.fallback import FallbackStorage
from django.http import Http404
from django.test import RequestFactory
from django.views.generic import FormView

from hosting.dashboard.refusals import ServiceErrorFormMixin, ServiceRefusalMixin
from hosting.errors import Conflict, NotFound, QuotaExceeded, ValidationFailed


class Form(ServiceErrorFormMixin, forms.Form):
    service_field_names = {"account_name": "name"}
    name = forms.CharField()
    allowed_ips = forms.CharField()


class View(ServiceRefusalMixin, FormView):
    form_class = Form
    template_name = "dashboard/app.html"

    def form_invalid(self, form):
        self.shown_again = form
        return "form shown again"


def valid_form() -> Form:
    form = Form({"name": "Creeper Hosting", "allowed_ips": "10.0.0.0/8"})
    assert form.is_valid()
    return form


def view() -> View:
    request = RequestFactory().post("/")
    request.session = {}
    request._messages = FallbackStorage(request)
    found = View()
    found.setup(request)
    return found


def test_field_errors_go_next_to_their_fields_and_the_form_is_shown_again():
    page, form = view(), valid_form()
    error = ValidationFailed(
        "2 fields are invalid.",
        details={
            "fields": [
                {"name": "allowed_ips.2", "code": "invalid", "message": "Not a network."},
                {"name": "account_name", "code": "required", "message": "A name is required."},
            ]
        },
    )
    assert page.refused(error, form=form) == "form shown again"
    assert form.errors == {"allowed_ips": ["Not a network."], "name": ["A name is required."]}
    assert list(get_messages(page.request)) == []


def test_a_refusal_naming_no_field_is_said_above_the_form():
    page, form = view(), valid_form()
    page.refused(QuotaExceeded("The account may have 3 servers."), form=form)
    assert form.non_field_errors() == ["The account may have 3 servers."]


def test_without_a_form_the_refusal_is_a_message_on_the_page_gone_back_to():
    page = view()
    response = page.refused(Conflict("The last owner cannot leave."), back_to="/team")
    assert (response.status_code, response["Location"]) == (302, "/team")
    assert [str(m) for m in get_messages(page.request)] == ["The last owner cannot leave."]


@pytest.mark.parametrize("with_form", [True, False])
def test_an_object_gone_meanwhile_is_the_404_page(with_form):
    page = view()
    with pytest.raises(Http404):
        page.refused(NotFound(), form=valid_form() if with_form else None, back_to="/")
