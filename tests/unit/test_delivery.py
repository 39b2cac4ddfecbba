# A reply that cannot leave the device (WiFi down) is sent again; one that may have arrived is not repeated.
from support import raises, run

from mimi.net import http
from mimi.telegram.api import TelegramError
from mimi.telegram.sender import Sender


class ScriptedAPI:
    """Answers each call with the next scripted outcome: an exception to raise, or a result."""

    def __init__(self, *outcomes):
        self.outcomes = list(outcomes)
        self.calls = []

    async def call(self, method, params=None, read_timeout=20):
        self.calls.append((method, params.get("text") if params else None))
        outcome = self.outcomes.pop(0) if self.outcomes else {"message_id": len(self.calls)}
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def _sender(api, patience_s=1):
    sender = Sender(api)
    sender.backoff_first_s = 0.01
    sender.patience_s = patience_s
    return sender


def test_a_reply_that_never_left_the_device_is_sent_once_the_network_is_back():
    down = http.NotSent("cannot reach api.telegram.org:443 (no route to host)")
    api = ScriptedAPI(down, down, down)
    run(_sender(api).send_plain(42, "The answer."))
    assert [c for c in api.calls if c[0] == "sendMessage"] == [("sendMessage", "The answer.")] * 4


def test_a_reply_that_may_have_arrived_is_not_sent_twice():
    api = ScriptedAPI(http.HTTPError("connection to api.telegram.org closed mid-response"))
    raises(http.HTTPError, run, _sender(api).send_plain(42, "Once only."))
    assert len(api.calls) == 1


def test_telegram_server_errors_are_retried_and_a_bad_request_is_not():
    api = ScriptedAPI(TelegramError(502, "Bad Gateway"), TelegramError(500, "Internal Server Error"))
    run(_sender(api).send_plain(42, "Through."))
    assert len(api.calls) == 3
    api = ScriptedAPI(TelegramError(400, "Bad Request: chat not found"))
    exc = raises(TelegramError, run, _sender(api).send_plain(42, "Nowhere."))
    assert exc.code == 400 and len(api.calls) == 1


def test_patience_runs_out_with_the_network_error():
    down = http.NotSent("cannot reach api.telegram.org:443 (no route to host)")
    api = ScriptedAPI(*([down] * 50))
    exc = raises(http.NotSent, run, _sender(api, patience_s=0.05).send_plain(42, "Lost cause."))
    assert "no route to host" in str(exc) and 2 <= len(api.calls) < 50


def test_connection_refused_is_not_sent_and_a_hang_up_after_the_request_is_not_that():
    import asyncio
    import os

    port = 21000 + os.urandom(1)[0] * 16 + os.urandom(1)[0] % 16
    exc = raises(http.NotSent, run, http.request("GET", "http://127.0.0.1:{}/".format(port)))
    assert "refused" in str(exc)

    async def hang_up(reader, writer):
        await reader.read(1024)  # the whole request arrives, then the server goes away without answering
        writer.close()
        await writer.wait_closed()

    async def main():
        server = await asyncio.start_server(hang_up, "127.0.0.1", port)
        try:
            await http.request("GET", "http://127.0.0.1:{}/x".format(port))
        finally:
            server.close()
            await server.wait_closed()

    exc = raises(http.HTTPError, run, main())
    assert not isinstance(exc, http.NotSent)
