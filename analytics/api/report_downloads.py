"""Each report's CSV as an operation of its own: ``GET <report>.csv`` (for example
``/v1/analytics/reports/spend.csv``), the same parameters, scopes and rows as the report, less
``format``.

A generated client reads an operation's answer as the one media type it declares: a report that
answers JSON or, with ``format=csv``, CSV could not be called for its CSV (openapi-python-client
and openapi-fetch parse a 200 as JSON). ``format=csv`` on the report itself still answers the
CSV, for the clients written before; the schema documents the ``.csv`` operations only
(``analytics.api.docs.split_csv_downloads``).
"""

from django.urls import path

from analytics.api.reports import ReportViewSet
from analytics.api.reports import urlpatterns as report_urlpatterns
from analytics.representations import report_csv_response

CSV_SUFFIX = ".csv"


def _download_view(view: type[ReportViewSet]) -> type[ReportViewSet]:
    """``view`` whose ``retrieve`` answers the report's CSV whatever ``format`` says, documented
    as the report is (its ``extend_schema``, which the hook reshapes)."""

    def retrieve(self, request):
        return report_csv_response(self.report(request.query_params))

    retrieve.kwargs = getattr(view.retrieve, "kwargs", {})  # type: ignore[attr-defined]
    return type(f"{view.__name__}CsvDownload", (view,), {"retrieve": retrieve})


urlpatterns = [
    path(
        f"{route.pattern}{CSV_SUFFIX}",
        _download_view(route.callback.cls).as_view({"get": "retrieve"}),
        name=f"{route.name}-csv",
    )
    for route in report_urlpatterns
]
