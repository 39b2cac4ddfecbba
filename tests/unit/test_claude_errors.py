# Every Claude failure becomes one clear message; only transient ones are retryable.
import json

from mimi.llm.errors import from_response, from_stream_error
from mimi.llm.stream import StreamError


def _body(kind, message):
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_1"})


def test_statuses_map_to_clear_messages_and_retry_policy():
    cases = (
        (401, "authentication_error", "API key was refused", False),
        (403, "permission_error", "not allowed", False),
        (404, "not_found_error", "Model 'm1' was not found", False),
        (400, "invalid_request_error", "rejected the request (400)", False),
        (413, "request_too_large", "too large", False),
        (429, "rate_limit_error", "rate limiting", True),
        (500, "api_error", "internal error", True),
        (529, "overloaded_error", "overloaded", True),
    )
    for status, kind, words, retryable in cases:
        err = from_response(status, {}, _body(kind, "detail"), "m1")
        assert words in err.message, (status, err.message)
        assert err.retryable == retryable, status
        assert err.status == status and err.kind == kind


def test_retry_after_header_is_read():
    err = from_response(429, {"retry-after": "7"}, _body("rate_limit_error", "slow down"), "m")
    assert err.retry_after == 7


def test_a_non_json_error_body_still_gives_a_message():
    err = from_response(502, {}, b"<html>Bad gateway</html>", "m")
    assert err.retryable and "502" in err.message


def test_mid_stream_error_events():
    err = from_stream_error(StreamError("overloaded_error", "Overloaded"))
    assert err.retryable and "overloaded" in err.message
    err = from_stream_error(StreamError("invalid_tool_input", "bad json"))
    assert not err.retryable and "invalid_tool_input" in err.message
