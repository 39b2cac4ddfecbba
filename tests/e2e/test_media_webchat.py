# Web chat attachments: POST /upload to flash, an "attach" frame, the same blocks and limits as Telegram.
import asyncio
import base64
import json
import urllib.error
import urllib.request

from websockets.asyncio.client import connect

from host_sim.telegram_files import jpeg_bytes, pdf_bytes
from tests.e2e.gateway_client import frame

KB = 1024


def _post(gw, key, name, media_type, data, token=None):
    url = "http://127.0.0.1:{}/upload?token={}&key={}&name={}".format(
        gw.port, gw.token if token is None else token, key, name)
    request = urllib.request.Request(url, data=data, headers={"Content-Type": media_type}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=20) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


class _Chat:
    """One web chat connection, as the page holds it: its hello's upload key, uploads made with it, frames sent on
    chat web_media."""

    def __init__(self, gw, ws):
        self.gw, self.ws, self.key = gw, ws, None

    async def start(self):
        self.key = (await frame(self.ws))["upload_key"]  # hello
        return self

    def post(self, *args, **kwargs):
        return asyncio.to_thread(_post, self.gw, self.key, *args, **kwargs)

    async def send(self, item):
        """The frames received until the response (or an error)."""
        await self.ws.send(json.dumps(dict(item, chat_id="web_media")))
        got = []
        while True:
            got.append(await frame(self.ws))
            if got[-1]["type"] in ("response", "error"):
                return got


def test_a_photo_and_a_pdf_from_the_web_chat_reach_claude(gateway, fake, flash):  # noqa: F811
    photo, pdf = jpeg_bytes(150 * KB), pdf_bytes(pad=40 * KB)

    async def main():
        async with connect(gateway.url()) as ws:
            chat = await _Chat(gateway, ws).start()
            status, answer = await chat.post("plant.jpg", "image/jpeg", photo)
            assert status == 200 and answer["kind"] == "image" and answer["size"] == len(photo)
            frames = await chat.send({"type": "attach", "attachment": answer["id"], "content": "What plant?"})
            assert frames[-1]["type"] == "response"
            assert "[image image/jpeg, {} bytes]".format(len(photo)) in frames[-1]["content"]
            status, answer = await chat.post("report.pdf", "application/pdf", pdf)
            await chat.send({"type": "attach", "attachment": answer["id"], "content": ""})

    asyncio.run(main())
    blocks = fake.wait_requests(1)[0]["body"]["messages"][-1]["content"]
    assert base64.b64decode(blocks[1]["source"]["data"]) == photo and blocks[2]["text"] == "What plant?"
    document = fake.wait_requests(2)[1]["body"]["messages"][-1]["content"][1]
    assert document["type"] == "document" and base64.b64decode(document["source"]["data"]) == pdf
    session = (flash / "data" / "sessions" / "websocket_web_media.jsonl").read_text()
    assert "[photo: What plant?]" in session and "[file report.pdf]" in session
    inbox = flash / "data" / "files" / "inbox"
    assert not inbox.exists() or not list(inbox.iterdir())


def test_web_chat_uploads_keep_the_limits_and_need_the_token(gateway, fake):  # noqa: F811
    async def main():
        async with connect(gateway.url()) as ws:
            chat = await _Chat(gateway, ws).start()
            status, answer = await chat.post("a.jpg", "image/jpeg", jpeg_bytes(2 * KB), token="wrong")
            assert status == 401
            await asyncio.to_thread(gateway.device.command, "config_set media_config.photo_max_bytes 10240")
            status, answer = await chat.post("big.jpg", "image/jpeg", jpeg_bytes(20 * KB))
            assert status == 413 and "over my limit of 10 KB" in answer["error"] and answer["photo_max_px"] == 1568
            status, answer = await chat.post("x.zip", "application/zip", b"PK\x03\x04" + b"z" * 100)
            assert status == 415 and "application/zip" in answer["error"]
            frames = await chat.send({"type": "attach", "attachment": "up_999", "content": "hi"})
            assert frames[-1]["type"] == "error" and "no such upload" in frames[-1]["error"].lower()

    asyncio.run(main())
    assert fake.requests == []
