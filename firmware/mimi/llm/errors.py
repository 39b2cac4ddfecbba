# Every way a model call can fail, as one error type whose message a user understands. The wording of a
# failed call (llm/explain.py) is imported only when one fails: the class alone waits at boot (agent/loop.py).
from mimi.platform import const

ERROR_BODY_MAX = const(8192)  # bytes of an error answer's body read, whichever wire


class ModelError(Exception):
    def __init__(self, kind, message, retryable=False, status=None, retry_after=None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after

    def __str__(self):
        return self.message


def from_response(status, headers, raw, model, profile=None, secrets=()):
    """An HTTP error answer -> ModelError; retryable for 408, 409, 429, 529 and 5xx. profile: the name of a
    profile other than claude, which the message then names; secrets: what the provider's words are masked of
    (Models.secrets: the message reaches the chat, the owner's notice and the log)."""
    from mimi.llm import explain

    return ModelError(*explain.answer(status, headers, raw, model, profile, secrets))


def from_stream_error(exc, profile=None, secrets=()):
    """A StreamError (an `error` event or a broken event) -> ModelError; retryable like its HTTP twin."""
    from mimi.llm import explain

    return ModelError(*explain.stream_error(exc.kind, exc.message, profile, secrets))
