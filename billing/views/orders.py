"""The page of ordering a plan.

Ordering is three steps on one page (``/billing/order``): the plan (one of its prices), for a
game server the game (when the plan runs more than one), then the server's or bot's settings
with an optional promotion code and the order's summary (``subscription_order_preview``: the
lines, the tax, the total, what is due today and at the renewal). The order is placed only at
the summary the page showed: a code typed since (or anything else that changed the amounts)
shows the new summary first. ``subscription_order`` does the rest: the first invoice, and the
server or bot once it is paid. The person lands on the new server when the order is paid at
once (credit, a trial, a free price), else on the invoice to pay.
"""

from functools import cached_property

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.generic import TemplateView

from billing.forms import OrderBotForm, OrderServerForm, price_every, price_label
from billing.mixins import BillingPageMixin, tax_label
from billing.models import InvoiceStatus, Price, ProductKind
from billing.rules.periods import moment_text
from billing.selectors import products_for_sale
from billing.services.subscriptions import (
    OrderPreview,
    subscription_order,
    subscription_order_preview,
)
from hosting.errors import ApplicationError
from servers.selectors import game_catalogue, region_default_for

# The plan page's tabs: each kind of plan, as a group.
KIND_TABS = {
    ProductKind.SERVER: gettext_lazy("Game servers"),
    ProductKind.BOT: gettext_lazy("Discord bots"),
}


def size_text(megabytes: int) -> str:
    """``2048`` as ``2 GB``, ``1536`` as ``1.5 GB``, ``512`` as ``512 MB``."""
    if megabytes < 1024:
        return f"{megabytes} MB"
    gigabytes = megabytes / 1024
    return f"{gigabytes:.1f}".removesuffix(".0") + " GB"


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
            raise Http404(_("This plan is not on sale."))
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
            raise Http404(_("This plan does not run that game."))
        return game

    @cached_property
    def currencies(self) -> list[str]:
        """The currencies plans of this kind are sold in."""
        products = products_for_sale().filter(kind=self.kind)
        return sorted({price.currency for product in products for price in product.active_prices})

    @cached_property
    def currency(self) -> str | None:
        """The account's currency once it has one (its first order sets it); before that, the
        one asked for (``?currency=``), else the first on sale: one currency at a time."""
        if self.profile.currency:
            return self.profile.currency
        asked = self.request.GET.get("currency", "").upper()
        if asked in self.currencies:
            return asked
        return self.currencies[0] if self.currencies else None

    def plans(self) -> list:
        products = list(products_for_sale().filter(kind=self.kind))
        names = dict(game_catalogue().values_list("slug", "name"))
        for product in products:
            product.offers = [
                (price, price_label(price))
                for price in product.active_prices
                if price.currency == self.currency
            ]
            product.game_names = [names.get(slug, slug) for slug in product.games]
            product.memory_text = size_text(product.memory_mb)
            product.disk_text = size_text(product.disk_mb)
        return [product for product in products if product.offers]

    def form(self, data=None):
        product = self.price.product
        if product.kind == ProductKind.BOT:
            form = OrderBotForm(data, product=product)
        else:
            form = OrderServerForm(data, product=product, game=self.game)
        if data is None:
            regions = form.fields["region"].queryset
            form.initial["region"] = region_default_for(account_id=self.account.pk, regions=regions)
        return form

    def get_context_data(self, **kwargs):
        kinds = [(value, KIND_TABS.get(value, label)) for value, label in ProductKind.choices]
        context = {"kind": self.kind, "kinds": kinds, "price": self.price}
        if self.price is None:
            context["step"], context["plans"] = "plan", self.plans()
            context["currency"] = self.currency
            # Before the first order, the person picks the currency; after, it is the account's.
            context["currencies"] = [] if self.profile.currency else self.currencies
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
            messages.error(request, _("Choose a plan first."))
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
            return _("The total changed with your promotion code: check it, then place the order.")
        return _("Check the total, then place the order.")

    def _summary(self, preview: OrderPreview, code: str | None) -> dict:
        """The summary as the page shows it; ``key`` names the amounts shown, so that the
        order placed is the one confirmed."""
        currency = preview.price.currency
        lines, tax, renewal = preview.first.lines, preview.first.tax, preview.renewal
        subtotal = sum(line["quantity"] * line["unit_amount"] for line in lines)
        discount = sum(line["discount_amount"] for line in lines)
        if tax.reverse_charge:
            tax_name = _("VAT (reverse charge)")
        else:
            percentage = format(tax.percentage.normalize(), "f")
            tax_name = tax_label(percentage, inclusive=tax.inclusive)
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
            "tax_label": tax_name,
            "tax_note": tax.note,
            "tax": self.money(sum(line["tax_amount"] for line in lines), currency),
            "total": self.money(preview.total, currency),
            "credit": self.money(-preview.credit_applied, currency)
            if preview.credit_applied
            else "",
            "due_today": self.money(preview.due_today, currency),
            "trial_end": moment_text(preview.trial_end) if preview.trial_end else "",
            "renewal": _("%(amount)s %(every)s")
            % {"amount": self.money(renewal.total, currency), "every": price_every(preview.price)},
            "renewal_at": moment_text(preview.renewal_at),
            "renewal_discounted": any(line["discount_amount"] for line in renewal.lines),
        }

    def _ordered(self, subscription, invoice):
        name = subscription.order.get("name", "")
        if invoice.status != InvoiceStatus.PAID:
            messages.success(
                self.request,
                _(
                    "Ordered “%(name)s”: it is created once invoice %(number)s is paid. "
                    "The ways to pay it are below."
                )
                % {"name": name, "number": invoice.number},
            )
            return redirect("billing_invoice", invoice_id=invoice.id)
        messages.success(
            self.request, _("Ordered “%(name)s”: it is being created.") % {"name": name}
        )
        if subscription.server_id:
            return redirect("server_detail", pk=subscription.server_id)
        if subscription.bot_id:
            return redirect("bot_detail", pk=subscription.bot_id)
        return redirect("billing_subscription", subscription_id=subscription.id)
