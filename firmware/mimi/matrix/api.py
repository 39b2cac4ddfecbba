# The Matrix client-server API over the firmware's HTTP client: JSON in and out, errors as MatrixError.
import json

from mimi import jsontext
from mimi.matrix import NS
from mimi.net import http
from mimi.platform import const

_RESPONSE_MAX = const(65536)  # a filtered sync stays far below this
CALL_TIMEOUT_S = const(20)


class MatrixError(Exception):
    """The homeserver said no: HTTP status, errcode (M_LIMIT_EXCEEDED...), its words, and retry_after_ms."""

    def __init__(self, status, errcode, text, retry_ms=None):
        super().__init__("{} {}: {}".format(status, errcode or "error", text))
        self.status, self.errcode, self.text, self.retry_ms = status, errcode, text, retry_ms


class API:
    def __init__(self, config):
        self.config = config

    def base(self):
        return self.config.get(NS, "homeserver").rstrip("/")

    async def call(self, method, path, body=None, timeout=CALL_TIMEOUT_S, token=True, give_way=None, wait=True,
                   base=None):
        """One request to the homeserver: its JSON answer (a dict), or MatrixError / http.HTTPError (never with
        the token or a password)."""
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = "Bearer " + self.config.get(NS, "token")
        data = None if body is None else json.dumps(body).encode()
        response = await http.request(method, (base or self.base()) + path, headers, data, timeout, None,
                                      timeout + 30, give_way, wait)
        try:
            raw = await response.read(_RESPONSE_MAX)
        finally:
            await response.aclose()
        try:
            answer = jsontext.loads(raw) if raw else {}
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise MatrixError(response.status, None, "malformed answer ({} bytes)".format(len(raw)))
        if response.status == 200:
            return answer
        retry = answer.get("retry_after_ms")
        if retry is None and "retry-after" in response.headers:
            try:
                retry = int(response.headers["retry-after"]) * 1000
            except ValueError:
                pass
        raise MatrixError(response.status, answer.get("errcode"), str(answer.get("error") or "")[:200], retry)
