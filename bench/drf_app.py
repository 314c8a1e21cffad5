"""``GET /v1/servers`` as an idiomatic DRF project would write it (not a test).

    DJANGO_SETTINGS_MODULE=bench.drf_settings gunicorn bench.drf_app:application -c gunicorn.conf.py

The reference issue 35 measures the service against: a ``ListAPIView`` with a
``ModelSerializer``, DRF's ``PageNumberPagination`` (its answer shaped as our envelope), and an
authentication class that looks the key up through the ORM (key, user and account with
``select_related``, the member's role in a second query), checks its HMAC under the key's
pepper, its state and the ``servers:read`` scope. The same models, database and answer as the
service; none of the service's own machinery (no key cache, no maintained counts, no plain-row
serializer).
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.drf_settings")

from django.core.wsgi import get_wsgi_application

application = get_wsgi_application()

from django.http import JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402
from django.utils import timezone  # noqa: E402
from rest_framework import exceptions, generics, pagination, serializers  # noqa: E402
from rest_framework.authentication import BaseAuthentication  # noqa: E402
from rest_framework.permissions import BasePermission  # noqa: E402
from rest_framework.response import Response  # noqa: E402

from accounts import keys  # noqa: E402
from accounts.models import ApiKey, Membership  # noqa: E402
from servers.models import Server  # noqa: E402


class BearerKeyAuthentication(BaseAuthentication):
    def authenticate(self, request):
        scheme, _, token = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        parsed = keys.parse_token(token.strip())
        if parsed is None:
            raise exceptions.AuthenticationFailed("Invalid API key.")
        try:
            api_key = ApiKey.objects.select_related("user", "account").get(key_id=parsed.key_id)
        except ApiKey.DoesNotExist:
            raise exceptions.AuthenticationFailed("Invalid API key.") from None
        if not keys.token_matches(parsed.token, digest=api_key.digest, pepper_id=api_key.pepper_id):
            raise exceptions.AuthenticationFailed("Invalid API key.")
        member = Membership.objects.filter(account=api_key.account, user=api_key.user).first()
        now = timezone.now()
        if (
            member is None
            or not api_key.user.is_active
            or (api_key.revoked_at and api_key.revoked_at <= now)
            or (api_key.expires_at and api_key.expires_at <= now)
            or api_key.account.is_suspended
        ):
            raise exceptions.AuthenticationFailed("Invalid API key.")
        return api_key.user, api_key


class HasScope(BasePermission):
    def has_permission(self, request, view):
        return request.auth is not None and view.required_scope in request.auth.scopes


class EnvelopePagination(pagination.PageNumberPagination):
    page_size = 25
    page_size_query_param = "per_page"
    max_page_size = 100

    def get_paginated_response(self, data):
        page = self.page
        return Response(
            {
                "success": True,
                "data": {
                    "servers": data,
                    "pagination": {
                        "page": page.number,
                        "per_page": page.paginator.per_page,
                        "total": page.paginator.count,
                        "total_pages": page.paginator.num_pages,
                    },
                },
            }
        )


class ServerSerializer(serializers.ModelSerializer):
    game = serializers.CharField(source="game_id", read_only=True)

    class Meta:
        model = Server
        fields = ["id", "name", "game", "status", "created_at"]


class ServerList(generics.ListAPIView):
    authentication_classes = [BearerKeyAuthentication]
    permission_classes = [HasScope]
    required_scope = "servers:read"
    serializer_class = ServerSerializer
    pagination_class = EnvelopePagination

    def get_queryset(self):
        return Server.objects.filter(
            account=self.request.auth.account, deleted_at__isnull=True
        ).order_by("-created_at", "-id")


def not_found(request, exception=None):
    return JsonResponse({"success": False}, status=404)


urlpatterns = [path("v1/servers", ServerList.as_view())]
handler404 = not_found
