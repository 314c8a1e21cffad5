"""The billing profile's page: who the account's invoices are made out to."""

from django.contrib import messages
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.generic import FormView

from billing.forms import BillingProfileForm
from billing.mixins import BillingPageMixin
from billing.services.profile import billing_profile_check, billing_profile_update
from hosting.errors import ApplicationError


class BillingProfileView(BillingPageMixin, FormView):
    """Who invoices are made out to; read-only for those who may not change it. The tax
    exemption (staff set it) and the currency (the first invoice fixes it) are only shown."""

    template_name = "billing/profile.html"

    @property
    def refused_url(self) -> str:
        return reverse("billing_profile")

    def get_form(self, form_class=None):
        data = self.request.POST if self.request.method == "POST" else None
        return BillingProfileForm.of(self.profile, data, read_only=not self.can_write)

    def post(self, request, *args, **kwargs):
        form = self.get_form()
        if form.is_valid():
            return self.form_valid(form)
        # The form refused some fields (a length, the e-mail's shape): the service's rules on
        # the others are said beside them, so every problem shows at once, as the API's do.
        try:
            billing_profile_check(account=self.account, changes=form.changes())
        except ApplicationError as error:
            form.add_service_error(error)
        return self.form_invalid(form)

    def form_valid(self, form):
        changes = form.changes()
        if not changes:
            messages.info(self.request, _("Nothing was changed."))
            return redirect("billing_profile")
        try:
            billing_profile_update(account=self.account, changes=changes, actor=self.actor())
        except ApplicationError as error:
            return self.refused(error, form=form)
        messages.success(
            self.request, _("Saved the billing profile: invoices finalized from now on show it.")
        )
        return redirect("billing_profile")

    def get_context_data(self, **kwargs):
        return super().get_context_data(profile=self.profile, **kwargs)
