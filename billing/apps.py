from django.apps import AppConfig


class BillingConfig(AppConfig):
    name = "billing"
    verbose_name = "Billing"

    def ready(self) -> None:
        # Importing models at ready() is what Django allows; at module level it is too early.
        from billing.selectors import products_offering_game
        from billing.services.subscriptions import subscription_end_on_deletion
        from events.services import event_consumer_add
        from servers.services.games import game_users_register

        # A plan's server or bot deleted by its customer ends its subscription (servers know
        # nothing of billing: the event of its deletion is the link).
        event_consumer_add(subscription_end_on_deletion)
        # A game a plan offers is not removed (servers know nothing of plans: billing says).
        game_users_register("products", products_offering_game)
        from hosting.dashboard.staff_home import StaffPanel, area_visible, register_staff_panel

        # The staff home's billing panel: today's run, payments and failures.
        register_staff_panel(
            StaffPanel(
                key="billing",
                order=20,
                template="staff/billing_panel.html",
                context=_billing_panel,
                visible=area_visible("billing"),
            )
        )


def _billing_panel(user) -> dict:
    from django.utils import timezone
    from django.utils.translation import gettext as _

    from billing.selectors import billing_today
    from hosting.money import format_amount

    today = billing_today(now=timezone.now())
    for payment in today["failures"]:
        payment.amount_shown = format_amount(payment.amount, payment.currency)
    # What today's passes did, in the job's order (billing/services/job/renewals.py).
    labels = {
        "renewals": _("Renewal invoices"),
        "collection_attempts": _("Collection attempts"),
        "period_started": _("Periods started"),
        "past_due": _("Gone past due"),
        "suspended": _("Suspended"),
        "unsuspended_late": _("Unsuspended once paid"),
        "termination_warnings": _("Termination warnings"),
        "terminated": _("Terminated"),
        "trial_notices": _("Trial notices"),
    }
    counts = today["run"].counts if today["run"] else {}
    today["steps"] = [(label, counts[step]) for step, label in labels.items() if counts.get(step)]
    return {"billing": today}
