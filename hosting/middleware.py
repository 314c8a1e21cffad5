"""Middleware of the dashboard and admin pages (the API has its own, in hosting/api/).

``UnstorableTextMiddleware``: requests whose path or query holds text no database can store.
The API has its own layers for this (id-shaped routes, hosting/api/params.py). Pages built on
Django's own views (admin's change pages, list searches) would pass a NUL straight to
PostgreSQL, which refuses it with an error: such a path is a 404 and such a query a 400, before
any view runs.

``MethodNotAllowedPageMiddleware``: Django has no ``handler405``; its views answer a method they
do not take (a GET of a POST-only address) with an empty body, which a browser shows as a blank
page. Outside the API, that answer becomes the product's 405 page.
"""

from django.core.exceptions import BadRequest
from django.http import Http404
from django.template.response import TemplateResponse

from hosting.api.middleware import API_PREFIX
from hosting.text import text_problem


class UnstorableTextMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path.startswith(API_PREFIX):
            if text_problem(request.path):
                raise Http404("No such page.")
            for name, values in request.GET.lists():
                if text_problem(name) or any(text_problem(value) for value in values):
                    raise BadRequest("The address holds characters that cannot be used.")
        return self.get_response(request)


class MethodNotAllowedPageMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            response.status_code == 405
            and not request.path.startswith(API_PREFIX)
            and not response.streaming
            and not response.content
        ):
            page = TemplateResponse(request, "405.html", status=405)
            page["Allow"] = response.get("Allow", "")
            return page.render()
        return response
