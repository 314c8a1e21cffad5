"""Dashboard pages of cards: Billing → Payment methods (saving a card with Stripe.js, which is
loaded from Stripe as Stripe requires), "Pay by card" on an invoice, and the page the bank sends
the customer back to after 3-D Secure."""

import stripe
from django.conf import settings
from django.contrib import messages
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views import View
from django.views.generic import TemplateView

from accounts.second_factor import (
    RecentSignInRequired,
    reauthentication_url,
    recently_authenticated,
)
from billing.mixins import BillingPageMixin, InvoiceObjectMixin
from billing.models import PaymentStatus
from billing.services.gateways import card_gateway
from hosting.api.exceptions import error_response
from hosting.errors import ApplicationError
from hosting.i18n import stored_text_shown
from stripe_gateway.models import PaymentMethod, StripeCharge
from stripe_gateway.services.charges import intent_apply
from stripe_gateway.services.client import stripe_client
from stripe_gateway.services.methods import (
    payment_method_remove,
    payment_method_save,
    payment_method_set_default,
    setup_intent_create,
)


def _being_confirmed() -> str:
    """Said while a card payment waits for its bank, in the active language."""
    return _("The card payment is being confirmed; this page will show it.")


class CardsPageMixin(BillingPageMixin):
    """A page of cards: only when the service has Stripe. Adding a card, or choosing the
    default, also needs the account to pay by card (``card_gateway``); an account the hosting
    company moved to other means still sees and removes the cards it saved."""

    needs_cards_offered = True

    def dispatch(self, request, *args, **kwargs):
        if not settings.STRIPE_ENABLED:
            raise Http404(_("Cards are not offered here."))
        return super().dispatch(request, *args, **kwargs)

    def refuse(self, request):
        refused = super().refuse(request)
        if refused is None and request.method == "POST" and self.needs_cards_offered:
            try:
                card_gateway(account=self.account)
            except ApplicationError as error:
                return self.refused(error, back_to=self.refused_url)
        return refused

    @property
    def refused_url(self) -> str:
        return reverse("billing_payment_methods")


class PaymentMethodsView(CardsPageMixin, TemplateView):
    """The account's saved cards, the default marked, and the form to add one."""

    template_name = "billing/payment_methods.html"

    def get_context_data(self, **kwargs):
        return super().get_context_data(
            methods=PaymentMethod.objects.filter(account=self.account),
            cards_refused=self.cards_refused,
            # Adding a card is a sensitive action: the form shows after a recent sign-in.
            recent_sign_in=recently_authenticated(self.request),
            reauthenticate_url=reauthentication_url(self.request, self.request.path),
            publishable_key=settings.STRIPE_PUBLISHABLE_KEY,
            **kwargs,
        )


class SetupIntentStartView(CardsPageMixin, View):
    """``POST`` from the page's script: a SetupIntent's client secret for Stripe.js."""

    http_method_names = ["post"]

    def refused(self, error: ApplicationError, *, back_to: str):
        return error_response(error, self.request)  # the page's script reads the envelope

    def post(self, request, *args, **kwargs):
        if not recently_authenticated(request):
            return error_response(RecentSignInRequired(), request)
        try:
            intent = setup_intent_create(account=self.account)
        except ApplicationError as error:
            return error_response(error, request)
        setup_intent = {"id": intent["id"], "client_secret": intent["client_secret"]}
        return JsonResponse({"success": True, "data": {"setup_intent": setup_intent}})


class PaymentMethodSaveView(CardsPageMixin, View):
    """``POST`` once Stripe.js confirmed the SetupIntent: keep the card."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        if not recently_authenticated(request):
            return self.refused(RecentSignInRequired(), back_to=self.refused_url)
        try:
            method = payment_method_save(
                account=self.account,
                setup_intent=request.POST.get("setup_intent", ""),
                actor=self.actor(),
            )
        except ApplicationError as error:
            return self.refused(error, back_to=self.refused_url)
        messages.success(request, _("%(card)s is saved.") % {"card": method.label})
        return redirect(self.refused_url)


class PaymentMethodActionView(CardsPageMixin, View):
    """``POST`` "Make default" or "Remove" on one card."""

    http_method_names = ["post"]
    verb = ""

    @property
    def needs_cards_offered(self) -> bool:
        return self.verb != "remove"  # a card the account no longer pays by can still go

    def post(self, request, *args, **kwargs):
        method = get_object_or_404(
            PaymentMethod, account=self.account, id=self.kwargs["payment_method_id"]
        )
        try:
            if self.verb == "default":
                payment_method_set_default(method=method, actor=self.actor())
                messages.success(
                    request,
                    _("%(card)s is now the card renewals charge.") % {"card": method.label},
                )
            else:
                payment_method_remove(method=method, actor=self.actor())
                messages.success(request, _("%(card)s is removed.") % {"card": method.label})
        except ApplicationError as error:
            return self.refused(error, back_to=self.refused_url)
        return redirect(self.refused_url)


class InvoicePayByCardView(InvoiceObjectMixin, View):
    """The invoice's "Pay by card" button: charge the default card now; when the bank wants
    the customer (3-D Secure), send them through it and back to the invoice."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        try:
            card = card_gateway(account=self.account)
        except ApplicationError as error:
            return self.refused(error, back_to=self.refused_url)
        return_url = request.build_absolute_uri(
            reverse("billing_invoice_card_return", args=[self.invoice.id])
        )
        try:
            started = card.pay_now(
                self.invoice,
                payment_method=request.POST.get("payment_method") or None,
                return_url=return_url,
                actor=self.actor(),
            )
        except ApplicationError as error:
            return self.refused(error, back_to=self.refused_url)
        payment = started.payment
        if started.redirect_url:
            return redirect(started.redirect_url)
        if started.client_secret:
            return render(
                request,
                "billing/card_confirm.html",
                {
                    "publishable_key": settings.STRIPE_PUBLISHABLE_KEY,
                    "client_secret": started.client_secret,
                    "return_url": return_url,
                    "invoice": self.invoice,
                },
            )
        if payment.status == "succeeded":
            messages.success(
                request, _("Invoice %(number)s is paid by card.") % {"number": self.invoice.number}
            )
        elif payment.status == "failed":
            messages.error(
                request,
                _("The card payment failed: %(reason)s")
                % {"reason": stored_text_shown(payment.failure_message)},
            )
        else:
            messages.info(request, _being_confirmed())
        return redirect(self.refused_url)


class CardReturnView(InvoiceObjectMixin, View):
    """Where the bank sends the customer back after 3-D Secure (``return_url``): the payment
    is brought to where its PaymentIntent stands at Stripe, then the invoice page says how it
    went. Reading Stripe again is harmless: the notification or the reconciliation would."""

    http_method_names = ["get"]

    def get(self, request, *args, **kwargs):
        charge = (
            StripeCharge.objects.select_related("payment")
            .filter(
                payment__invoice=self.invoice,
                payment_intent=request.GET.get("payment_intent", ""),
            )
            .first()
        )
        if charge is None:
            messages.error(request, _("That card payment is not one of this invoice's."))
            return redirect(self.refused_url)
        try:
            intent = stripe_client().v1.payment_intents.retrieve(charge.payment_intent)
        except stripe.StripeError:
            messages.info(request, _being_confirmed())
            return redirect(self.refused_url)
        outcome = intent_apply(charge.payment, intent)
        if outcome.status == PaymentStatus.SUCCEEDED:
            messages.success(
                request, _("Invoice %(number)s is paid by card.") % {"number": self.invoice.number}
            )
        elif outcome.status == PaymentStatus.FAILED:
            charge.payment.refresh_from_db()
            messages.error(
                request,
                _("The card payment failed: %(reason)s")
                % {"reason": stored_text_shown(charge.payment.failure_message)},
            )
        else:
            messages.info(request, _being_confirmed())
        return redirect(self.refused_url)
