"""The report endpoints (customer and staff), each with a CSV export of the same rows."""

urlpatterns: list = []
