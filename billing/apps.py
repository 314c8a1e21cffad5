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
