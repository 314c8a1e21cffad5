from django.urls import path

from stripe_gateway import views

urlpatterns = [path("stripe/webhook", views.stripe_webhook, name="stripe_webhook")]
