"""Reading the contract's answers in tests, strictly (CONTRACT §3): one helper for every test."""

ERROR_KEYS = {"code", "message", "details", "request_id"}


def error_body(response) -> dict:
    """The ``error`` of an error envelope, after checking the envelope itself: JSON, exactly
    ``success: false`` and ``error``, a message, a snake_case code, and the request id the
    ``X-Request-Id`` header carries."""
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert set(body) == {"success", "error"} and body["success"] is False, body
    error = body["error"]
    assert {"code", "message", "request_id"} <= set(error) <= ERROR_KEYS, error
    assert error["code"] and error["code"].replace("_", "").isalpha(), error
    assert isinstance(error["message"], str) and error["message"], error
    if response.has_header("X-Request-Id"):
        assert error["request_id"] == response["X-Request-Id"], error
    return error


def error_of(response, status: int, code: str | None = None) -> dict:
    """The error of an answer that must have ``status`` (and ``code``, when given)."""
    assert response.status_code == status, (response.status_code, response.content[:2000])
    error = error_body(response)
    if code is not None:
        assert error["code"] == code, error
    return error


def field_errors(response) -> list[tuple[str, str]]:
    """``(name, code)`` of each field a ``400 validation_failed`` answer names, in its order."""
    error = error_of(response, 400, "validation_failed")
    return [(field["name"], field["code"]) for field in error["details"]["fields"]]


def parameter_errors(response) -> list[tuple[str, str]]:
    """``(name, code)`` of each parameter a ``400 invalid_parameter`` answer names, in order."""
    error = error_of(response, 400, "invalid_parameter")
    return [(item["name"], item["code"]) for item in error["details"]["parameters"]]
