# What a failed model call says to the user: an HTTP error answer or a stream error as the fields of the
# ModelError llm/errors.py makes of them (imported only when a call fails). Claude's own words for the
# claude profile; another profile is named, with the command that mends it.
from mimi import jsontext
from mimi.platform import const
from mimi.safety.masking import outside

_MESSAGE_MAX = const(200)
# A 400 that means the profile cannot answer, whatever is asked (a LiteLLM proxy's way to refuse a key or a model):
# the chain's next profile answers (llm/chain.py).
_CANNOT = ("No connected db", "Invalid model name", "Authentication Error", "invalid api key")
CANNOT_ANSWER = "cannot_answer"
WINDOW_REFUSED = "exceed_context_size_error"  # llama.cpp's server: the prompt is over its window


def _api_detail(raw, secrets):
    """(type, message) of an error body: Anthropic's {"error": {"type", "message"}} and OpenAI's
    {"error": {"message", "type", "code"}} alike; the message masked (a provider may quote the request's key)."""
    try:
        err = jsontext.loads(raw)["error"]
        kind = err.get("type") or err.get("code") or ""
        return str(kind), outside(err.get("message", ""), secrets, _MESSAGE_MAX)
    except (ValueError, KeyError, TypeError, AttributeError):
        return "", ""


def _claude(status, kind, detail, model):
    if status == 401 or kind == "authentication_error":
        return "The Anthropic API key was refused (401). Set a valid one with: set_api_key <key>"
    if status == 403 or kind == "permission_error":
        return "This API key is not allowed to do that (403): {}".format(detail)
    if status == 404 or kind == "not_found_error":
        return "Model '{}' was not found (404). Choose another with: set_model <id>".format(model)
    if status == 413 or kind == "request_too_large":
        return "The conversation is too large for one request (413). Start afresh with: session_clear <chat>"
    if status == 429 or kind == "rate_limit_error":
        return "The Anthropic API is rate limiting this key (429). Please try again in a minute."
    if status == 529 or kind == "overloaded_error":
        return "Claude is overloaded right now (529). Please try again shortly."
    if status == 400 or kind == "invalid_request_error":
        return "The Anthropic API rejected the request (400): {}".format(detail)
    if kind == "api_error" or (status and status >= 500):
        return "The Anthropic API had an internal error ({}). Please try again.".format(status or kind)
    return "The Anthropic API answered with an error ({}): {}".format(status or kind, detail)


def _profile(status, kind, detail, model, name):
    if status == 401 or kind in ("authentication_error", "invalid_api_key"):
        return "Model profile {0} refused its key (401). Set a valid one with: llm_key {0} <key>".format(name)
    if status == 403 or kind == "permission_error":
        return "Model profile {}'s key is not allowed to do that (403): {}".format(name, detail)
    if status == 404 or kind in ("not_found_error", "model_not_found"):
        return "Model '{}' was not found at profile {} (404): {}. Change it with: llm_add {} ...".format(
            model, name, detail or "no such model", name)
    if status == 413 or kind == "request_too_large":
        return "The conversation is too large for profile {} (413). Start afresh with: session_clear <chat>".format(
            name)
    if status == 429 or kind in ("rate_limit_error", "rate_limit_exceeded", "insufficient_quota"):
        return "Model profile {} is rate limiting this key (429): {}".format(name, detail or "try again in a minute")
    if status == 529 or kind == "overloaded_error":
        return "Model profile {} is overloaded right now (529). Please try again shortly.".format(name)
    if kind == WINDOW_REFUSED:
        return "The request was over model profile {0}'s window (400: {1}). Give the profile the server's own " \
            "window: llm_ctx {0} <tokens>".format(name, detail)
    if kind == CANNOT_ANSWER:
        return "Model profile {} cannot answer (400): {}".format(name, detail.split("\n", 1)[0])
    if status == 400 or kind == "invalid_request_error":
        return "Model profile {} rejected the request (400): {}".format(name, detail)
    if kind == "api_error" or (status and status >= 500):
        return "Model profile {} had an internal error ({}){}. Please try again.".format(
            name, status or kind, ": " + detail if detail else "")
    return "Model profile {} answered with an error ({}): {}".format(name, status or kind, detail)


def _explain(status, kind, detail, model, profile):
    if profile:
        return _profile(status, kind, detail, model, profile)
    return _claude(status, kind, detail, model)


def answer(status, headers, raw, model, profile=None, secrets=()):
    """(kind, message, retryable, status, retry_after) of an HTTP error answer; secrets: what its text must not
    show (Models.secrets)."""
    kind, detail = _api_detail(raw, secrets)
    if status == 400 and profile and _cannot(detail):
        kind = CANNOT_ANSWER
    retry_after = None
    if "retry-after" in headers:
        try:
            retry_after = int(float(headers["retry-after"]))
        except ValueError:
            pass
    retryable = status in (408, 409, 429, 529) or status >= 500
    return kind or "http_{}".format(status), _explain(status, kind, detail, model, profile), retryable, status, \
        retry_after


def _cannot(detail):
    lowered = detail.lower()
    for words in _CANNOT:
        if words.lower() in lowered:
            return True
    return False


def stream_error(kind, detail, profile=None, secrets=()):
    """(kind, message, retryable) of a StreamError's kind and message (masked, as answer's)."""
    detail = outside(detail, secrets)
    retryable = kind in ("overloaded_error", "api_error", "rate_limit_error")
    if kind in ("overloaded_error", "api_error", "rate_limit_error", "authentication_error"):
        message = _explain(None, kind, detail, "", profile)
    elif profile:
        message = "Model profile {}'s reply stopped with an error ({}): {}".format(profile, kind, detail)
    else:
        message = "Claude's reply stopped with an error ({}): {}".format(kind, detail)
    return kind, message, retryable
