# A WebSocket client's side of the gateway for the e2e tests: the booted firmware's address and token, and the
# frames of a chat (the `gateway` fixture is in conftest.py).
import asyncio
import json
import re
import urllib.error
import urllib.request

from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.e2e.conftest import API_KEY

FRAME_WAIT_S = 20


class Gateway:
    def __init__(self, device, port):
        self.device = device
        self.port = port
        self.token = token_of(device)

    def url(self, token=None, path="/ws"):
        token = self.token if token is None else token
        return "ws://127.0.0.1:{}{}{}".format(self.port, path, "?token=" + token if token else "")

    def http(self, path, headers=None):
        """(status, headers, body) of a plain HTTP GET."""
        request = urllib.request.Request("http://127.0.0.1:{}{}".format(self.port, path), headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                return resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers, exc.read()


def token_of(device):
    out = device.command("ws_token")
    return re.search(r"gateway token: (\S+)", out).group(1)


def listening(dev, port):
    """Wait for a freshly booted firmware's gateway (its line may come before or after "ready": each is looked
    for from the start, and what follows is read after the later of the two)."""
    ends = []
    for line in (r"gateway: web chat on http://\S+:{}/".format(port), r"ready: network up"):
        dev.pos = 0
        ends.append(dev.expect(line).end())
    dev.pos = max(ends)


def start(boot, port, *args):
    dev = boot("--ws-port", str(port), *args)
    listening(dev, port)
    assert "saved" in dev.command("set_api_key " + API_KEY)
    return dev


async def frame(ws):
    return json.loads(await asyncio.wait_for(ws.recv(), FRAME_WAIT_S))


async def hello(ws):
    first = await frame(ws)
    assert first["type"] == "hello"
    return first["chat_id"]


async def until_reply(ws):
    """Every frame up to and including the response or error frame."""
    frames = []
    while True:
        frames.append(await frame(ws))
        if frames[-1]["type"] in ("response", "error"):
            return frames


def say(content, chat_id=None):
    msg = {"type": "message", "content": content}
    if chat_id is not None:
        msg["chat_id"] = chat_id
    return json.dumps(msg)


def session_lines(flash, chat_id):
    path = flash / "data" / "sessions" / "websocket_{}.jsonl".format(chat_id)
    return [(line["role"], line["content"]) for line in map(json.loads, path.read_text().splitlines())]


def refused_status(url, **kwargs):
    async def attempt():
        try:
            async with connect(url, open_timeout=10, **kwargs):
                return None
        except InvalidStatus as exc:
            return exc.response.status_code

    return asyncio.run(attempt())
