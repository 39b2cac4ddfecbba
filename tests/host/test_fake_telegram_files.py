# The fake Telegram's files: photo sizes and documents in updates, getFile, downloads, cut and 404.
import http.client

from host_sim.telegram_files import jpeg_bytes
from tests.host.test_fake_telegram import TOKEN, exchange, fake  # noqa: F401  (the fixture)


def _download(url, path, token=TOKEN):
    host, port = url.split("://")[1].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", "/file/bot{}/{}".format(token, path))
        response = conn.getresponse()
        try:
            return response.status, response.read(), True
        except http.client.IncompleteRead as exc:
            return response.status, exc.partial, False
    finally:
        conn.close()


def test_a_photo_update_offers_its_sizes_and_each_downloads_through_getfile(fake):  # noqa: F811
    small, large = jpeg_bytes(2000), jpeg_bytes(90000)
    fake.photo_message(42, [(90, 68, small), (800, 600, large)], caption="look")
    status, _, body = exchange(fake.url, "getUpdates", {"timeout": 0})
    message = body["result"][0]["message"]
    assert message["caption"] == "look" and [p["width"] for p in message["photo"]] == [90, 800]
    assert message["photo"][1]["file_size"] == len(large)
    status, _, body = exchange(fake.url, "getFile", {"file_id": message["photo"][1]["file_id"]})
    found = body["result"]
    assert status == 200 and found["file_size"] == len(large) and found["file_path"].startswith("photos/")
    assert _download(fake.url, found["file_path"]) == (200, large, True)
    assert _download(fake.url, found["file_path"], token="123:wrong")[0] == 404


def test_getfile_refuses_an_unknown_file_and_downloads_fail_as_scripted(fake):  # noqa: F811
    status, _, body = exchange(fake.url, "getFile", {"file_id": "nope"})
    assert (status, body["description"]) == (400, "Bad Request: invalid file_id")
    fake.document_message(42, b"%PDF-1.4 hello", "a.pdf", "application/pdf")
    document = exchange(fake.url, "getUpdates", {"timeout": 0})[2]["result"][0]["message"]["document"]
    assert document["file_name"] == "a.pdf" and document["mime_type"] == "application/pdf"
    path = exchange(fake.url, "getFile", {"file_id": document["file_id"]})[2]["result"]["file_path"]
    fake.cut_download_next(5)
    status, data, complete = _download(fake.url, path)
    assert status == 200 and data == b"%PDF-" and not complete
    fake.missing_download_next()
    assert _download(fake.url, path)[0] == 404
    assert _download(fake.url, path) == (200, b"%PDF-1.4 hello", True)
    assert [d["status"] for d in fake.downloads] == [200, 404, 200]
