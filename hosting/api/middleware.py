"""The API's response headers and last-resort error envelope."""

from hosting.api.exceptions import error_response

API_PREFIX = "/v1/"


class ApiErrorMiddleware:
    """Under ``/v1/``: add the rate-limit headers, and answer uncaught errors in the envelope."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        state = getattr(request, "rate_limit", None)
        if state is not None:
            for name, value in state.headers().items():
                response[name] = value
        return response

    def process_exception(self, request, exception):
        if request.path.startswith(API_PREFIX):
            return error_response(exception, request)
        return None
