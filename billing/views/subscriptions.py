"""The account's subscriptions: the list, and one subscription's page.

A subscription's page shows its plan, period and invoices; it changes the plan (a preview of
the proration first, then the change), cancels at the period's end or now, and resumes.
"""

from django.contrib import messages
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views import View
from django.views.generic import ListView, TemplateView

from billing.forms import PlanChangeForm, SubscriptionListFilter, plan_label, price_label
from billing.mixins import BillingPageMixin, SubscriptionObjectMixin
from billing.models import InvoiceStatus, Subscription, SubscriptionStatus
from billing.rules.periods import moment_text, period_text
from billing.selectors import invoices_of_account, subscriptions_of_account
from billing.services.subscriptions import (
    subscription_cancel,
    subscription_change,
    subscription_change_preview,
    subscription_resume,
)
from hosting.dashboard.lists import ListControlsMixin
from hosting.errors import ApplicationError


def _shown(subscription: Subscription) -> Subscription:
    subscription.name = subscription.order.get("name", "")
    subscription.plan_text = price_label(subscription.price)
    subscription.period = period_text(
        subscription.current_period_start, subscription.current_period_end
    )
    subscription.renews_text = moment_text(subscription.current_period_end)
    return subscription


class SubscriptionListView(ListControlsMixin, BillingPageMixin, ListView):
    """The account's plans, found by their server's or bot's name, filtered by status."""

    template_name = "billing/subscription_list.html"
    context_object_name = "subscriptions"
    search_fields = ("order__name", "=id")
    search_label = gettext_lazy("Server or bot name")
    filterset_class = SubscriptionListFilter
    sort_fields = {"created_at": "created_at", "current_period_end": "current_period_end"}
    default_sort = "-created_at"

    def get_base_queryset(self):
        return subscriptions_of_account(account_id=self.account.id).select_related("price__product")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        for subscription in context["subscriptions"]:
            _shown(subscription)
        return context


class SubscriptionDetailView(SubscriptionObjectMixin, TemplateView):
    """A plan: where it stands, its invoices, and changing, cancelling or resuming it.
    ``?price=`` previews a change to that price."""

    template_name = "billing/subscription_detail.html"
    http_method_names = ["get", "head", "options"]

    def get_context_data(self, **kwargs):
        subscription = _shown(self.subscription)
        live = subscription.status not in (
            SubscriptionStatus.CANCELED,
            SubscriptionStatus.INCOMPLETE,
        )
        chosen = self.request.GET if "price" in self.request.GET else None
        fitting, no_fit = None, False
        if chosen is None and "fits" in self.request.GET:
            # From a server's settings refused by its plan: the cheapest plan that gives it.
            fitting = self._fitting_price(subscription, self.request.GET["fits"])
            no_fit = fitting is None
            chosen = {"price": fitting.pk} if fitting is not None else None
        change_form = PlanChangeForm(chosen, subscription=subscription)
        preview = None
        if live and change_form.is_bound and change_form.is_valid():
            try:
                change = subscription_change_preview(
                    subscription=subscription, price=change_form.cleaned_data["price"]
                )
            except ApplicationError as error:
                change_form.add_error("price", error.message)
            else:
                preview = self._preview(change)
        invoices = list(
            invoices_of_account(account_id=self.account.id)
            .prefetch_related(None)
            .filter(subscription=subscription)
        )
        for invoice in invoices:
            invoice.total_shown = self.money(invoice.total, invoice.currency)
        return super().get_context_data(
            subscription=subscription,
            live=live,
            change_form=change_form if live else None,
            preview=preview,
            fitting=fitting,
            no_fit=no_fit and live,
            invoices=invoices,
            **kwargs,
        )

    @staticmethod
    def _fitting_price(subscription: Subscription, fits: str):
        """The cheapest plan the subscription may change to that gives at least ``fits``
        (``memory_mb:4096,disk_mb:20480``), preferring its own interval; None when none does."""
        wanted: dict[str, int] = {}
        for part in fits.split(",")[:3]:
            field, _, value = part.partition(":")
            known = field in {"memory_mb", "cpu_percent", "disk_mb"}
            if known and value.isascii() and value.isdigit() and len(value) <= 10:
                wanted[f"product__{field}__gte"] = int(value)
        prices = PlanChangeForm(subscription=subscription).fields["price"].queryset.filter(**wanted)
        game = subscription.server.game_id if subscription.server_id else None
        fitting = [
            price
            for price in prices
            if game is None or not price.product.games or game in price.product.games
        ]
        current = subscription.price
        same_interval = [
            price
            for price in fitting
            if (price.interval, price.interval_count) == (current.interval, current.interval_count)
        ]
        return min(same_interval or fitting, key=lambda price: price.unit_amount, default=None)

    def _preview(self, change) -> dict:
        currency = change.price.currency
        lines = change.priced.lines if change.priced else []
        return {
            "price": change.price,
            "plan": plan_label(change.price),
            "lines": [
                {
                    "description": line["description"],
                    "amount": self.money(line["unit_amount"], currency),
                }
                for line in lines
            ],
            "tax": self.money(sum(line["tax_amount"] for line in lines), currency),
            "total": self.money(abs(change.total), currency),
            "outcome": "invoice" if change.total > 0 else "credit" if change.total < 0 else "",
        }


class SubscriptionChangeView(SubscriptionObjectMixin, View):
    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        form = PlanChangeForm(request.POST, subscription=self.subscription)
        if not form.is_valid():
            messages.error(request, _("Choose the plan to change to."))
            return redirect(self.refused_url)
        try:
            subscription, invoice = subscription_change(
                subscription=self.subscription,
                price=form.cleaned_data["price"],
                actor=self.actor(),
            )
        except ApplicationError as error:
            return self.refused(error, back_to=self.refused_url)
        plan = subscription.price.product.name
        if invoice is not None and invoice.status != InvoiceStatus.PAID:
            messages.success(
                request,
                _("Changed to %(plan)s: pay invoice %(number)s.")
                % {"plan": plan, "number": invoice.number},
            )
            return redirect("billing_invoice", invoice_id=invoice.id)
        messages.success(request, _("Changed to %(plan)s.") % {"plan": plan})
        return redirect(self.refused_url)


class SubscriptionCancelView(SubscriptionObjectMixin, View):
    """``at_period_end=1`` (the default) or ``0`` (now)."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        at_period_end = request.POST.get("at_period_end", "1") != "0"
        try:
            subscription = subscription_cancel(
                subscription=self.subscription, at_period_end=at_period_end, actor=self.actor()
            )
        except ApplicationError as error:
            return self.refused(error, back_to=self.refused_url)
        if subscription.status == SubscriptionStatus.CANCELED:
            messages.success(request, _("Canceled: the server or bot is being deleted."))
        else:
            ends = moment_text(subscription.current_period_end)
            messages.success(
                request,
                _("It will end on %(ends)s; you can resume it until then.") % {"ends": ends},
            )
        return redirect(self.refused_url)


class SubscriptionResumeView(SubscriptionObjectMixin, View):
    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        try:
            subscription_resume(subscription=self.subscription, actor=self.actor())
        except ApplicationError as error:
            return self.refused(error, back_to=self.refused_url)
        messages.success(request, _("Resumed: it renews as before."))
        return redirect(self.refused_url)
