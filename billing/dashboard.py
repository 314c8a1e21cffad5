"""Dashboard pages of ordering a plan and of the account's subscriptions.

Ordering is three steps on one page (``/billing/order``): the plan (one of its prices), for a
game server the game (when the plan runs more than one), then the server's or bot's settings
with an optional promotion code and the order's summary (``subscription_order_preview``: the
lines, the tax, the total, what is due today and at the renewal). The order is placed only at
the summary the page showed: a code typed since (or anything else that changed the amounts)
shows the new summary first. ``subscription_order`` does the rest: the first invoice, and the
server or bot once it is paid. The person lands on the new server when the order is paid at
once (credit, a trial, a free price), else on the invoice to pay.

A subscription's page shows its plan, period and invoices; it changes the plan (a preview of
the proration first, then the change), cancels at the period's end or now, and resumes.
"""

from functools import cached_property

from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views import View
from django.views.generic import ListView, TemplateView

from billing.forms import (
    OrderBotForm,
    OrderServerForm,
    PlanChangeForm,
    SubscriptionListFilter,
    price_every,
    price_label,
)
from billing.models import InvoiceStatus, Price, ProductKind, Subscription, SubscriptionStatus
from billing.selectors import invoices_of_account, products_for_sale, subscriptions_of_account
from billing.services.subscriptions import (
    OrderPreview,
    subscription_cancel,
    subscription_change,
    subscription_change_preview,
    subscription_order,
    subscription_order_preview,
    subscription_resume,
)
from billing.views import BillingPageMixin, moment_text, period_text
from hosting.dashboard.lists import ListControlsMixin
from hosting.errors import ApplicationError
from servers.selectors import game_catalogue

# --- Ordering ---------------------------------------------------------------------------------


class OrderView(BillingPageMixin, TemplateView):
    """``?kind=server|bot`` lists the plans; ``?price=`` picks one; ``&game=`` its game."""

    template_name = "billing/order.html"

    @property
    def refused_url(self) -> str:
        return reverse("billing_order")

    @cached_property
    def kind(self) -> str:
        kind = self.request.GET.get("kind")
        if self.price is not None:
            return self.price.product.kind
        return kind if kind in ProductKind.values else ProductKind.SERVER

    @cached_property
    def price(self) -> Price | None:
        price_id = self.request.GET.get("price")
        if not price_id:
            return None
        price = (
            Price.objects.select_related("product")
            .filter(pk=price_id, active=True, product__active=True)
            .first()
        )
        if price is None:
            raise Http404("This plan is not on sale.")
        return price

    @cached_property
    def games(self):
        games = game_catalogue()
        product = self.price.product
        return games.filter(slug__in=product.games) if product.games else games

    @cached_property
    def game(self):
        slug = self.request.GET.get("game")
        if not slug:
            games = list(self.games[:2])
            return games[0] if len(games) == 1 else None
        game = self.games.filter(slug=slug).first()
        if game is None:
            raise Http404("This plan does not run that game.")
        return game

    def plans(self) -> list:
        products = list(products_for_sale().filter(kind=self.kind))
        currency = self.profile.currency
        for product in products:
            product.offers = [
                (price, price_label(price))
                for price in product.active_prices
                if not currency or price.currency == currency
            ]
        return [product for product in products if product.offers]

    def form(self, data=None):
        product = self.price.product
        if product.kind == ProductKind.BOT:
            return OrderBotForm(data, product=product)
        return OrderServerForm(data, product=product, game=self.game)

    def get_context_data(self, **kwargs):
        context = {"kind": self.kind, "kinds": ProductKind.choices, "price": self.price}
        if self.price is None:
            context["step"], context["plans"] = "plan", self.plans()
        else:
            context["price_text"] = price_label(self.price)
            needs_game = self.kind == ProductKind.SERVER and self.game is None
            context["step"] = "game" if needs_game else "settings"
            context["games"] = self.games if needs_game else None
            context["game"] = self.game
            if not needs_game:
                context.setdefault("form", kwargs.pop("form", None) or self.form())
                if "summary" not in kwargs:
                    context["summary"] = self._summary_without_code()
        return super().get_context_data(**context, **kwargs)

    def _summary_without_code(self) -> dict | None:
        try:
            return self._summary(
                subscription_order_preview(account=self.account, price=self.price), None
            )
        except ApplicationError:
            return None  # the plan cannot be ordered here: ordering says why

    def post(self, request, *args, **kwargs):
        if self.price is None or (self.kind == ProductKind.SERVER and self.game is None):
            messages.error(request, "Choose a plan first.")
            return redirect("billing_order")
        form = self.form(request.POST)
        summary = None
        if form.is_valid():
            order = form.order(self.game) if self.kind == ProductKind.SERVER else form.order()
            code = form.promotion_code()
            try:
                preview = subscription_order_preview(
                    account=self.account, price=self.price, order=order, promotion_code=code
                )
                summary = self._summary(preview, code)
                if request.POST.get("summary") != summary["key"]:
                    # Never an order at amounts the person has not seen: show them first.
                    messages.info(request, self._changed(request.POST.get("summary"), code))
                    return self.render_to_response(
                        self.get_context_data(form=form, summary=summary)
                    )
                subscription, invoice = subscription_order(
                    account=self.account,
                    price=self.price,
                    order=order,
                    promotion_code=code,
                    actor=self.actor(),
                )
            except ApplicationError as error:
                form.add_service_error(error)
                summary = None
            else:
                return self._ordered(subscription, invoice)
        summary = summary or self._summary_without_code()
        return self.render_to_response(self.get_context_data(form=form, summary=summary))

    @staticmethod
    def _changed(seen: str | None, code: str | None) -> str:
        if seen is not None and seen.split("|", 1)[0] != (code or ""):
            return "The total changed with your promotion code: check it, then place the order."
        return "Check the total, then place the order."

    def _summary(self, preview: OrderPreview, code: str | None) -> dict:
        """The summary as the page shows it; ``key`` names the amounts shown, so that the
        order placed is the one confirmed."""
        currency = preview.price.currency
        lines, tax, renewal = preview.first.lines, preview.first.tax, preview.renewal
        subtotal = sum(line["quantity"] * line["unit_amount"] for line in lines)
        discount = sum(line["discount_amount"] for line in lines)
        if tax.reverse_charge:
            tax_label = "VAT (reverse charge)"
        else:
            percentage = format(tax.percentage.normalize(), "f")
            tax_label = f"Tax {percentage}%" + (" (included)" if tax.inclusive else "")
        return {
            "key": f"{code or ''}|{preview.total}|{preview.due_today}|{renewal.total}",
            "lines": [
                {
                    "description": line["description"],
                    "amount": self.money(line["quantity"] * line["unit_amount"], currency),
                }
                for line in lines
            ],
            "subtotal": self.money(subtotal, currency),
            "discount": self.money(-discount, currency) if discount else "",
            "coupon": preview.coupon.name if preview.coupon else "",
            "tax_label": tax_label,
            "tax_note": tax.note,
            "tax": self.money(sum(line["tax_amount"] for line in lines), currency),
            "total": self.money(preview.total, currency),
            "credit": self.money(-preview.credit_applied, currency)
            if preview.credit_applied
            else "",
            "due_today": self.money(preview.due_today, currency),
            "trial_end": moment_text(preview.trial_end) if preview.trial_end else "",
            "renewal": f"{self.money(renewal.total, currency)} {price_every(preview.price)}",
            "renewal_at": moment_text(preview.renewal_at),
            "renewal_discounted": any(line["discount_amount"] for line in renewal.lines),
        }

    def _ordered(self, subscription, invoice):
        name = subscription.order.get("name", "")
        if invoice.status != InvoiceStatus.PAID:
            messages.success(
                self.request,
                f"Ordered “{name}”: it is created once invoice {invoice.number} is paid. "
                "The ways to pay it are below.",
            )
            return redirect("billing_invoice", invoice_id=invoice.id)
        messages.success(self.request, f"Ordered “{name}”: it is being created.")
        if subscription.server_id:
            return redirect("server_detail", pk=subscription.server_id)
        if subscription.bot_id:
            return redirect("bot_detail", pk=subscription.bot_id)
        return redirect("billing_subscription", subscription_id=subscription.id)


# --- Subscriptions ----------------------------------------------------------------------------


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
    search_label = "Server or bot name"
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


class SubscriptionObjectMixin(BillingPageMixin):
    @cached_property
    def subscription(self) -> Subscription:
        subscriptions = subscriptions_of_account(account_id=self.account.id).select_related(
            "price__product", "server", "bot"
        )
        return get_object_or_404(subscriptions, id=self.kwargs["subscription_id"])

    @property
    def refused_url(self) -> str:
        return reverse("billing_subscription", args=[self.kwargs["subscription_id"]])


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
            "plan": f"{change.price.product.name}: {price_label(change.price)}",
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
            messages.error(request, "Choose the plan to change to.")
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
            messages.success(request, f"Changed to {plan}: pay invoice {invoice.number}.")
            return redirect("billing_invoice", invoice_id=invoice.id)
        messages.success(request, f"Changed to {plan}.")
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
            messages.success(request, "Canceled: the server or bot is being deleted.")
        else:
            ends = moment_text(subscription.current_period_end)
            messages.success(request, f"It will end on {ends}; you can resume it until then.")
        return redirect(self.refused_url)


class SubscriptionResumeView(SubscriptionObjectMixin, View):
    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        try:
            subscription_resume(subscription=self.subscription, actor=self.actor())
        except ApplicationError as error:
            return self.refused(error, back_to=self.refused_url)
        messages.success(request, "Resumed: it renews as before.")
        return redirect(self.refused_url)
