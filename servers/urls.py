"""Dashboard pages for servers."""

urlpatterns: list = []
