# Every way a model call can fail, as one error type whose message a user understands. The wording of a
# failed call (llm/explain.py) is imported only when one fails: the class alone waits at boot (agent/loop.py).

# Kinds of failure after which the next profile of a chain may answer (llm/models.py): the profile cannot
# answer now, whatever was asked (a request the API refused, 400 or 413, would be refused by the next too).
_UNREACHABLE = ("network", "tls", "cut", "bad_stream", "no_api_key")
_FAILOVER_STATUSES = (401, 403, 404, 408, 409, 429)
_FAILOVER_KINDS = ("overloaded_error", "api_error", "rate_limit_error", "authentication_error", "permission_error",
                   "not_found_error")


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

    @property
    def fails_over(self):
        """True when the next profile of a chain should be asked instead (nothing of the reply shown yet)."""
        status = self.status or 0
        return self.kind in _UNREACHABLE or status in _FAILOVER_STATUSES or status >= 500 \
            or self.kind in _FAILOVER_KINDS

    @property
    def key_refused(self):
        return self.status in (401, 403) or self.kind in ("authentication_error", "permission_error")


def from_response(status, headers, raw, model, profile=None):
    """An HTTP error answer -> ModelError; retryable for 408, 409, 429, 529 and 5xx. profile: the name of a
    profile other than claude, which the message then names."""
    from mimi.llm import explain

    return ModelError(*explain.answer(status, headers, raw, model, profile))


def from_stream_error(exc, profile=None):
    """A StreamError (an `error` event or a broken event) -> ModelError; retryable like its HTTP twin."""
    from mimi.llm import explain

    return ModelError(*explain.stream_error(exc.kind, exc.message, profile))
