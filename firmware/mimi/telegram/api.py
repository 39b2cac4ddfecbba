# The Telegram Bot API over the firmware's HTTP client: JSON in, the `result` out, errors as values.
import json

from mimi import jsontext
from mimi.net import http
from mimi.platform import const

_RESPONSE_MAX = const(65536)  # a small getUpdates limit keeps batches far below this
CALL_TIMEOUT_S = const(20)


class TelegramError(Exception):
    """The Bot API answered ok=false: its error_code, description and retry_after (for 429)."""

    def __init__(self, code, description, retry_after=None):
        super().__init__("Telegram {}: {}".format(code, description))
        self.code = code
        self.description = description
        self.retry_after = retry_after


class BotAPI:
    def __init__(self, config):
        self.config = config

    def has_token(self):
        return self.config.is_set("tg_config", "bot_token")

    async def call(self, method, params=None, read_timeout=CALL_TIMEOUT_S, body=None, content_type=None,
                   give_way=None, wait=True):
        """POST one method; returns `result`. Raises TelegramError or http.HTTPError (never with the token).
        params as JSON, or a body of pieces with its content_type (multipart: a file streamed from flash);
        give_way, wait: small-board mode's turn at the one TLS session (net/http.py request)."""
        base = self.config.get("tg_config", "api_base").rstrip("/")
        url = "{}/bot{}/{}".format(base, self.config.get("tg_config", "bot_token"), method)
        if body is None:
            body = json.dumps(params or {}).encode()
        try:
            response = await http.request(
                "POST", url, {"content-type": content_type or "application/json"}, body, read_timeout, None,
                http.DEADLINE_S, give_way, wait
            )
        except ValueError as exc:  # a bad api_base: the URL it quotes holds the bot token
            raise ValueError(self._outside(str(exc)))
        try:
            raw = await response.read(_RESPONSE_MAX)
        finally:
            await response.aclose()
        try:
            envelope = jsontext.loads(raw)
        except ValueError:
            raise TelegramError(response.status, "malformed response ({} bytes)".format(len(raw)))
        if not isinstance(envelope, dict):
            raise TelegramError(response.status, "malformed response")
        if envelope.get("ok"):
            return envelope.get("result")
        parameters = envelope.get("parameters") or {}
        retry_after = parameters.get("retry_after")
        if retry_after is None and "retry-after" in response.headers:
            try:
                retry_after = int(response.headers["retry-after"])
            except ValueError:
                pass
        raise TelegramError(
            envelope.get("error_code", response.status), self._outside(envelope.get("description", "")), retry_after
        )

    def _outside(self, text):
        """Telegram's (or the URL's) words with every secret masked, the bot token first (safety/masking.py)."""
        from mimi.safety import masking

        return masking.outside(text, masking.secrets(self.config))
