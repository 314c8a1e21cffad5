from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        # Importing models at ready() is what Django allows; at module level it is too early.
        from events.services import event_consumer_add
        from webhooks.services import deliveries_for_event, deliveries_for_events

        event_consumer_add(deliveries_for_event, many=deliveries_for_events)
