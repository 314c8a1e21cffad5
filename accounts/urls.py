"""Dashboard pages for signing in and the account settings."""

urlpatterns: list = []
