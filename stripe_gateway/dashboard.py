"""Dashboard pages of cards: Billing → Payment methods (saving a card with Stripe.js, which is
loaded from Stripe as Stripe requires), and "Pay by card" on an invoice."""

from django.conf import settings
from django.contrib import messages
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views import View
from django.views.generic import TemplateView

from billing.services.gateways import gateway_for_source
from billing.views import BillingPageMixin, InvoiceObjectMixin
from hosting.errors import ApplicationError
from stripe_gateway.models import PaymentMethod
from stripe_gateway.services.methods import (
    payment_method_remove,
    payment_method_save,
    payment_method_set_default,
    setup_intent_create,
)


class CardsPageMixin(BillingPageMixin):
    """A page of cards: only when the service offers them."""

    def dispatch(self, request, *args, **kwargs):
        if not settings.STRIPE_ENABLED:
            raise Http404("Cards are not offered here.")
        return super().dispatch(request, *args, **kwargs)

    @property
    def refused_url(self) -> str:
        return reverse("billing_payment_methods")


class PaymentMethodsView(CardsPageMixin, TemplateView):
    """The account's saved cards, the default marked, and the form to add one."""

    template_name = "billing/payment_methods.html"

    def get_context_data(self, **kwargs):
        return super().get_context_data(
            methods=PaymentMethod.objects.filter(account=self.account),
            publishable_key=settings.STRIPE_PUBLISHABLE_KEY,
            **kwargs,
        )


class SetupIntentStartView(CardsPageMixin, View):
    """``POST`` from the page's script: a SetupIntent's client secret for Stripe.js."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        try:
            intent = setup_intent_create(account=self.account)
        except ApplicationError as error:
            return JsonResponse({"error": error.message}, status=error.status)
        return JsonResponse({"id": intent["id"], "client_secret": intent["client_secret"]})


class PaymentMethodSaveView(CardsPageMixin, View):
    """``POST`` once Stripe.js confirmed the SetupIntent: keep the card."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        try:
            method = payment_method_save(
                account=self.account, setup_intent=request.POST.get("setup_intent", ""),
                actor=self.actor(),
            )  # fmt: skip
        except ApplicationError as error:
            return self.refused(error, back_to=self.refused_url)
        messages.success(request, f"{method.label} is saved.")
        return redirect(self.refused_url)


class PaymentMethodActionView(CardsPageMixin, View):
    """``POST`` "Make default" or "Remove" on one card."""

    http_method_names = ["post"]
    verb = ""

    def post(self, request, *args, **kwargs):
        method = get_object_or_404(
            PaymentMethod, account=self.account, id=self.kwargs["payment_method_id"]
        )
        try:
            if self.verb == "default":
                payment_method_set_default(method=method, actor=self.actor())
                messages.success(request, f"{method.label} is now the card renewals charge.")
            else:
                payment_method_remove(method=method, actor=self.actor())
                messages.success(request, f"{method.label} is removed.")
        except ApplicationError as error:
            return self.refused(error, back_to=self.refused_url)
        return redirect(self.refused_url)


class InvoicePayByCardView(InvoiceObjectMixin, View):
    """The invoice's "Pay by card" button: charge the default card now; when the bank wants
    the customer (3-D Secure), send them through it and back to the invoice."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        card = gateway_for_source("card")
        if card is None:
            raise Http404("Cards are not offered here.")
        return_url = request.build_absolute_uri(
            reverse("billing_invoice_card_return", args=[self.invoice.id])
        )
        try:
            started = card.pay_now(
                self.invoice, payment_method=request.POST.get("payment_method") or None,
                return_url=return_url, actor=self.actor(),
            )  # fmt: skip
        except ApplicationError as error:
            return self.refused(error, back_to=self.refused_url)
        payment = started.payment
        if started.redirect_url:
            return redirect(started.redirect_url)
        if started.client_secret:
            return render(request, "billing/card_confirm.html", {
                "publishable_key": settings.STRIPE_PUBLISHABLE_KEY,
                "client_secret": started.client_secret, "return_url": return_url,
                "invoice": self.invoice,
            })  # fmt: skip
        if payment.status == "succeeded":
            messages.success(request, f"Invoice {self.invoice.number} is paid by card.")
        elif payment.status == "failed":
            messages.error(request, f"The card payment failed: {payment.failure_message}")
        else:
            messages.info(request, "The card payment is being confirmed; this page will show it.")
        return redirect(self.refused_url)
