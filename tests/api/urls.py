"""The real URL configuration plus a few views that exist only to exercise the plumbing."""

from django.urls import path
from rest_framework.response import Response
from rest_framework.views import APIView

from hosting.urls import urlpatterns as real_urlpatterns


class EchoView(APIView):
    required_scopes = {"post": []}

    def post(self, request):
        return Response({"echo": request.data}, status=201)


class BrokenView(APIView):
    required_scopes = {"get": []}

    def get(self, request):
        raise RuntimeError("secret-database-password leaked in an exception")


class UndeclaredView(APIView):
    def get(self, request):
        return Response({"never": "shown"})


def plain_broken_view(request):
    raise RuntimeError("boom outside DRF")


urlpatterns = [
    path("v1/_test/echo", EchoView.as_view()),
    path("v1/_test/broken", BrokenView.as_view()),
    path("v1/_test/undeclared", UndeclaredView.as_view()),
    path("v1/_test/plain-broken", plain_broken_view),
    *real_urlpatterns,
]
