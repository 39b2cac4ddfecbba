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


def _post(gw, name, media_type, data, token=None):
    url = "http://127.0.0.1:{}/upload?token={}&name={}".format(gw.port, gw.token if token is None else token, name)
    request = urllib.request.Request(url, data=data, headers={"Content-Type": media_type}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=20) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


async def _send(gw, frames):
    """Send the frames on one chat; the frames received until the response (or an error)."""
    got = []
    async with connect(gw.url()) as ws:
        await frame(ws)  # hello
        for item in frames:
            await ws.send(json.dumps(dict(item, chat_id="web_media")))
        while True:
            got.append(await frame(ws))
            if got[-1]["type"] in ("response", "error"):
                return got


def test_a_photo_and_a_pdf_from_the_web_chat_reach_claude(gateway, fake, flash):  # noqa: F811
    photo = jpeg_bytes(150 * KB)
    status, answer = _post(gateway, "plant.jpg", "image/jpeg", photo)
    assert status == 200 and answer["kind"] == "image" and answer["size"] == len(photo)
    frames = asyncio.run(_send(gateway, [{"type": "attach", "attachment": answer["id"], "content": "What plant?"}]))
    assert frames[-1]["type"] == "response" and "[image image/jpeg, {} bytes]".format(len(photo)) in frames[-1]["content"]
    blocks = fake.wait_requests(1)[0]["body"]["messages"][-1]["content"]
    assert base64.b64decode(blocks[1]["source"]["data"]) == photo and blocks[2]["text"] == "What plant?"
    pdf = pdf_bytes(pad=40 * KB)
    status, answer = _post(gateway, "report.pdf", "application/pdf", pdf)
    frames = asyncio.run(_send(gateway, [{"type": "attach", "attachment": answer["id"], "content": ""}]))
    document = fake.wait_requests(2)[1]["body"]["messages"][-1]["content"][1]
    assert document["type"] == "document" and base64.b64decode(document["source"]["data"]) == pdf
    session = (flash / "data" / "sessions" / "websocket_web_media.jsonl").read_text()
    assert "[photo: What plant?]" in session and "[file report.pdf]" in session
    inbox = flash / "data" / "files" / "inbox"
    assert not inbox.exists() or not list(inbox.iterdir())


def test_web_chat_uploads_keep_the_limits_and_need_the_token(gateway, fake):  # noqa: F811
    status, answer = _post(gateway, "a.jpg", "image/jpeg", jpeg_bytes(2 * KB), token="wrong")
    assert status == 401
    gateway.device.command("config_set media_config.photo_max_bytes 10240")
    status, answer = _post(gateway, "big.jpg", "image/jpeg", jpeg_bytes(20 * KB))
    assert status == 413 and "over my limit of 10 KB" in answer["error"] and answer["photo_max_px"] == 1568
    status, answer = _post(gateway, "x.zip", "application/zip", b"PK\x03\x04" + b"z" * 100)
    assert status == 415 and "application/zip" in answer["error"]
    frames = asyncio.run(_send(gateway, [{"type": "attach", "attachment": "up_999", "content": "hi"}]))
    assert frames[-1]["type"] == "error" and "attach it again" in frames[-1]["error"]
    assert fake.requests == []
