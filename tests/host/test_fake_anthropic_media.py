# The fake Anthropic API refuses bad image and document blocks, and server tools, as the real API does.
import base64
import json

from host_sim.telegram_files import jpeg_bytes, pdf_bytes, png_bytes
from tests.host.test_fake_anthropic import fake, post, request_body  # noqa: F401  (the fixture)


def _image(media_type, data):
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def _with(block):
    return request_body([block, {"type": "text", "text": "what is this?"}], stream=False)


def _refusal(fake, body, headers=None):  # noqa: F811
    status, _, raw, _ = post(fake.url, body, headers)
    answer = json.loads(raw)
    return status, answer["error"]["type"] if status != 200 else None, answer.get("error", {}).get("message", "")


def test_valid_images_documents_and_text_documents_are_accepted(fake):  # noqa: F811
    for block in (_image("image/jpeg", base64.b64encode(jpeg_bytes(3000)).decode()),
                  _image("image/png", base64.b64encode(png_bytes()).decode()),
                  {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                                  "data": base64.b64encode(pdf_bytes()).decode()}},
                  {"type": "document", "title": "notes.txt",
                   "source": {"type": "text", "media_type": "text/plain", "data": "line one\nline two"}}):
        status, _, message = _refusal(fake, _with(block))
        assert status == 200, message
    said = json.loads(post(fake.url, _with(_image("image/png", base64.b64encode(png_bytes()).decode())))[2])
    assert "[image image/png, {} bytes]".format(len(png_bytes())) in said["content"][0]["text"]


def test_bad_media_blocks_get_the_real_400s(fake):  # noqa: F811
    jpeg = base64.b64encode(jpeg_bytes(2000)).decode()
    cases = [
        (_image("image/bmp", jpeg), "media_type: Input should be 'image/jpeg' or 'image/png'"),
        (_image("image/jpeg", jpeg[:-3] + "!!="), "Invalid base64 data"),
        (_image("image/png", jpeg), "Image does not match the provided media type image/png"),
        (_image("image/jpeg", base64.b64encode(jpeg_bytes(5 * 1024 * 1024 + 10)).decode()),
         "image exceeds 5 MB maximum"),
        ({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": jpeg}},
         "The PDF specified was not valid."),
        ({"type": "document", "source": {"type": "text", "media_type": "text/markdown", "data": "x"}},
         "Input should be 'text/plain'"),
    ]
    for block, expected in cases:
        status, kind, message = _refusal(fake, _with(block))
        assert (status, kind) == (400, "invalid_request_error") and expected in message, message
        assert message.startswith("messages.0.content.0")


def test_server_tools_and_the_web_fetch_beta_header(fake):  # noqa: F811
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
    fetch = {"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 3}
    assert _refusal(fake, request_body(stream=False, tools=[search]))[0] == 200
    status, kind, message = _refusal(fake, request_body(stream=False, tools=[search, fetch]))
    assert status == 400 and "'web_fetch_20250910'" in message and "does not match any of the expected tags" in message
    assert _refusal(fake, request_body(stream=False, tools=[search, fetch]),
                    {"anthropic-beta": "web-fetch-2025-09-10"})[0] == 200
    status, _, message = _refusal(fake, request_body(stream=False, tools=[dict(search, max_uses=0)]))
    assert status == 400 and "max_uses" in message
    status, _, message = _refusal(fake, request_body(stream=False, tools=[dict(search, name="search")]))
    assert status == 400 and "Input should be 'web_search'" in message
