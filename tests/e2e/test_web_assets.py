# The web app's files as a board serves them from its image (#23): the build keeps only the gzip copy of the
# page and its scripts, served gzip-encoded with Vary and a strong ETag, and a 304 for a file the
# browser already has. The browser tests run the sources (plain files); this runs the ROMFS form, as flashed.
import gzip
import os
import urllib.error
import urllib.request

import pytest

from tests.e2e.device import Device
from tests.e2e.test_gateway import free_port, listening
from tests.runtimes import MICROPYTHON_ROMFS, ROOT

ASSETS = (("", "index.html"), ("attach.js", "attach.js"), ("views.js", "views.js"), ("favicon.svg", "favicon.svg"),
          ("favicon.ico", "favicon.svg"))


@pytest.fixture
def board(tmp_path, fake):
    port = free_port()
    device = Device(MICROPYTHON_ROMFS, tmp_path / "flash", "--anthropic-api", fake.url, "--ws-port", str(port))
    try:
        device.ready()
        listening(device, port)
        yield "http://127.0.0.1:{}/".format(port)
    finally:
        device.stop()


def test_the_image_serves_the_gzip_copies_with_an_etag_and_a_304(board):
    for path, source in ASSETS:
        asked = urllib.request.Request(board + path, headers={"Accept-Encoding": "gzip, deflate"})
        with urllib.request.urlopen(asked) as answer:
            body = answer.read()
            headers = answer.headers
        assert headers["Content-Encoding"] == "gzip" and headers["Vary"] == "Accept-Encoding", dict(headers)
        assert int(headers["Content-Length"]) == len(body) and body[:2] == b"\x1f\x8b"
        with open(os.path.join(ROOT, "firmware", "www", source), "rb") as f:
            assert gzip.decompress(body) == f.read(), source  # the very file the build compressed
        etag = headers["ETag"]
        assert etag.startswith('"') and not etag.startswith('W/'), etag  # strong: the bytes, not a guess
        again = urllib.request.Request(board + path, headers={"Accept-Encoding": "gzip", "If-None-Match": etag})
        with pytest.raises(urllib.error.HTTPError) as unchanged:
            urllib.request.urlopen(again)
        assert unchanged.value.code == 304
        other = urllib.request.Request(board + path, headers={"If-None-Match": '"not-this-one"'})
        with urllib.request.urlopen(other) as answer:
            assert answer.status == 200
