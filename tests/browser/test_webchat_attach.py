# The web chat's attach button in headless Chromium: a photo too big for the device is scaled down in the
# page, uploaded to flash and reaches Claude as an image block within the limits.
import base64
import struct
import zlib

from tests.browser.conftest import API_KEY
from tests.e2e.test_gateway import free_port, token_of

WAIT_MS = 30_000


def _noisy_png(width, height):
    """A PNG that compresses badly (so it is big), made without any imaging library."""
    import os

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\x00" + os.urandom(width * 3) for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b""))


def test_an_attached_photo_is_scaled_to_the_limits_and_reaches_claude(page, firmware, fake, tmp_path):
    port = free_port()
    device = firmware(port)
    assert "saved" in device.command("set_api_key " + API_KEY)
    page.goto("http://127.0.0.1:{}/?token={}".format(port, token_of(device)))
    page.wait_for_selector("#state.ok", timeout=WAIT_MS)
    photo = tmp_path / "garden.png"
    photo.write_bytes(_noisy_png(2000, 1500))  # about 9 MB: over 1568 px and over 200 KB
    page.set_input_files("#file", str(photo))
    page.wait_for_selector(".msg.note >> text=attached: garden.png", timeout=WAIT_MS)
    page.fill("#text", "what is growing here?")
    page.press("#text", "Enter")
    page.wait_for_selector(".msg.user >> text=[photo: what is growing here?]", timeout=WAIT_MS)
    page.wait_for_selector(".msg.bot:not(.streaming)", timeout=WAIT_MS)
    (request,) = fake.wait_requests(1)
    image = request["body"]["messages"][-1]["content"][1]
    data = base64.b64decode(image["source"]["data"])
    assert image["source"]["media_type"] == "image/jpeg" and data[:3] == b"\xff\xd8\xff"
    assert len(data) <= 200 * 1024
    width, height = _jpeg_size(data)
    assert max(width, height) <= 1568
    assert "[image image/jpeg" in page.locator(".msg.bot").last.text_content()


def _jpeg_size(data):
    at = 2
    while at < len(data):
        marker, length = data[at + 1], struct.unpack(">H", data[at + 2:at + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return width, height
        at += 2 + length
    raise AssertionError("no frame header")
