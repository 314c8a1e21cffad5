"""The agent's errors: each carries the machine-readable code and HTTP status it answers with.

Only ``agent.app`` turns them into HTTP; the supervisor raises them without knowing about it.
"""


class AgentError(Exception):
    """An error the API answers with ``{"error": {"code", "message"}}``."""

    code = "agent_error"
    status = 500

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InvalidToken(AgentError):
    code = "invalid_token"
    status = 401


class NotFound(AgentError):
    code = "not_found"
    status = 404


class ValidationFailed(AgentError):
    code = "validation_failed"
    status = 400


class InvalidJson(AgentError):
    code = "invalid_json"
    status = 400


class InvalidParameter(AgentError):
    code = "invalid_parameter"
    status = 400


class InvalidState(AgentError):
    code = "invalid_state"
    status = 409


class SecretsMissing(AgentError):
    """The spec's environment values were lost with an agent restart and not sent again."""

    code = "secrets_missing"
    status = 409


class ConsoleInputFull(AgentError):
    """The process has not read its standard input; the agent never blocks on it."""

    code = "console_input_full"
    status = 503


class InstallFailed(AgentError):
    code = "install_failed"
    status = 422


class StartFailed(AgentError):
    code = "start_failed"
    status = 422


class NotIsolated(AgentError):
    """The node cannot sandbox and was not started with AGENT_ALLOW_UNISOLATED."""

    code = "not_isolated"
    status = 409


class UidsExhausted(AgentError):
    """Every uid of AGENT_UID_RANGE belongs to a server (or to a folder not yet removed)."""

    code = "no_free_uid"
    status = 507
