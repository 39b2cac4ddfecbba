# Photos and files from Telegram, end to end: the size that fits, the download to flash, the block Claude gets.
import base64
import json

import pytest

from host_sim.telegram_files import jpeg_bytes, pdf_bytes
from tests.e2e.conftest import OWNER_ID, TG_TOKEN

OWNER = OWNER_ID
KB = 1024


@pytest.fixture
def bot(owner_bot):
    return owner_bot


def _sizes(*spec):
    return [(side, side * 3 // 4, jpeg_bytes(nbytes, bytes([side % 251]) * 64)) for side, nbytes in spec]


def _user_blocks(request):
    return request["body"]["messages"][-1]["content"]


def _session(flash):
    path = flash / "data" / "sessions" / "telegram_42.jsonl"
    return [json.loads(line)["content"] for line in path.read_text().splitlines()] if path.exists() else []


def _inbox(flash):
    folder = flash / "data" / "files" / "inbox"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_a_photo_with_a_caption_reaches_claude_as_an_image_block_built_from_the_download(bot, tg, fake, flash):
    dev = bot()
    sizes = _sizes((90, 2 * KB), (320, 20 * KB), (800, 90 * KB), (1280, 190 * KB))
    tg.photo_message(OWNER, sizes, caption="What plant is this?")
    assert tg.wait_for(lambda: tg.sent(OWNER), 30), dev.output[-3000:]
    (request,) = fake.wait_requests(1)
    blocks = _user_blocks(request)
    assert [b["type"] for b in blocks] == ["text", "image", "text"]
    image = blocks[1]
    assert image["source"]["type"] == "base64" and image["source"]["media_type"] == "image/jpeg"
    assert base64.b64decode(image["source"]["data"]) == sizes[3][2]  # the largest size within 200 KB
    assert blocks[2]["text"] == "What plant is this?"
    assert request["status"] == 200  # the fake API validated the image block as the real one does
    assert [d["status"] for d in tg.downloads] == [200]
    (reply,) = tg.sent(OWNER)
    assert "[image image/jpeg, {} bytes]".format(190 * KB) in reply["shown"]
    assert _session(flash)[0] == "[photo: What plant is this?]"  # never the bytes
    assert _inbox(flash) == []  # the file left with its turn
    assert TG_TOKEN not in dev.output


def test_an_over_limit_photo_picks_a_smaller_size_and_no_caption_asks_a_default_question(bot, tg, fake, flash):
    bot()
    sizes = _sizes((320, 20 * KB), (800, 150 * KB), (1280, 300 * KB), (2560, 900 * KB))
    tg.photo_message(OWNER, sizes)
    assert tg.wait_for(lambda: tg.sent(OWNER), 30)
    (request,) = fake.wait_requests(1)
    blocks = _user_blocks(request)
    assert base64.b64decode(blocks[1]["source"]["data"]) == sizes[1][2]
    assert "What is in this photo?" in blocks[2]["text"]
    assert _session(flash)[0] == "[photo]"


def test_the_photo_size_limit_is_settable(bot, tg, fake):
    dev = bot()
    dev.command("config_set media_config.photo_max_px 400")
    sizes = _sizes((320, 20 * KB), (800, 90 * KB))
    tg.photo_message(OWNER, sizes, caption="small please")
    assert tg.wait_for(lambda: tg.sent(OWNER), 30)
    assert base64.b64decode(_user_blocks(fake.wait_requests(1)[0])[1]["source"]["data"]) == sizes[0][2]


def test_a_cut_download_is_tried_again_then_answered_clearly_and_loses_nothing(bot, tg, fake, flash):
    dev = bot()
    sizes = _sizes((320, 20 * KB), (800, 120 * KB))
    tg.cut_download_next(30 * KB)  # once: the second try succeeds
    tg.photo_message(OWNER, sizes, caption="first")
    assert tg.wait_for(lambda: tg.sent(OWNER), 30), dev.output[-3000:]
    assert [d["status"] for d in tg.downloads] == [200, 200]
    assert base64.b64decode(_user_blocks(fake.wait_requests(1)[0])[1]["source"]["data"]) == sizes[1][2]
    tg.cut_download_next(30 * KB, times=3)  # every try cut
    update = tg.photo_message(OWNER, sizes, caption="second")
    assert tg.wait_for(lambda: len(tg.sent(OWNER)) == 2, 40), dev.output[-3000:]
    said = tg.sent(OWNER)[1]["shown"]
    assert "broke off" in said and "send it again" in said
    assert len(fake.requests) == 1  # no Claude call for a photo that never arrived
    assert _session(flash) == ["[photo: first]", _session(flash)[1]] and _inbox(flash) == []
    assert tg.wait_for(lambda: tg.offset_confirmed >= update, 20)  # answered, so confirmed
    tg.missing_download_next()
    tg.photo_message(OWNER, sizes, caption="third")
    assert tg.wait_for(lambda: len(tg.sent(OWNER)) == 3, 30)
    assert "no longer has your photo (404)" in tg.sent(OWNER)[2]["shown"]


def test_a_pdf_and_a_text_file(bot, tg, fake, flash):
    bot()
    pdf = pdf_bytes("Quarterly report", pad=50 * KB)
    tg.document_message(OWNER, pdf, "report.pdf", "application/pdf", caption="Summarise this")
    assert tg.wait_for(lambda: tg.sent(OWNER), 30)
    document = _user_blocks(fake.wait_requests(1)[0])[1]
    assert document["type"] == "document" and document["title"] == "report.pdf"
    assert document["source"]["media_type"] == "application/pdf"
    assert base64.b64decode(document["source"]["data"]) == pdf
    notes = "Einkaufsliste:\n- Äpfel \U0001F34F\n- \"Brot\"\n".encode()
    tg.document_message(OWNER, notes, "list.txt", "text/plain")
    assert tg.wait_for(lambda: len(tg.sent(OWNER)) == 2, 30)
    document = _user_blocks(fake.wait_requests(2)[1])[1]
    assert document["source"] == {"type": "text", "media_type": "text/plain", "data": notes.decode()}
    assert _session(flash)[0] == "[file report.pdf: Summarise this]"
    assert _session(flash)[2] == "[file list.txt]" and _inbox(flash) == []


def test_unsupported_and_over_limit_files_are_answered_clearly_without_claude(bot, tg, fake):
    bot()
    tg.document_message(OWNER, b"PK\x03\x04" + b"z" * 100, "photos.zip", "application/zip")
    assert tg.wait_for(lambda: tg.sent(OWNER), 20)
    assert "not application/zip files" in tg.sent(OWNER)[0]["shown"]
    tg.document_message(OWNER, pdf_bytes(pad=1100 * KB), "big.pdf", "application/pdf")
    assert tg.wait_for(lambda: len(tg.sent(OWNER)) == 2, 20)
    said = tg.sent(OWNER)[1]["shown"]
    assert "big.pdf" in said and "over my limit of 1 MB" in said
    tg.non_text_message(OWNER, "video_note")
    assert tg.wait_for(lambda: len(tg.sent(OWNER)) == 3, 20)
    assert "not this kind of message" in tg.sent(OWNER)[2]["shown"]
    assert fake.requests == [] and tg.downloads == []


def test_killed_during_a_photo_turn_it_is_answered_once_after_the_reboot(bot, tg, fake, flash):
    from host_sim.fake_anthropic import stall

    dev = bot()
    fake.script(stall("", seconds=60, before_headers=True))  # Claude says nothing: the power goes
    sizes = _sizes((320, 20 * KB), (800, 90 * KB))
    update = tg.photo_message(OWNER, sizes, caption="kill me")
    assert tg.wait_for(lambda: [r for r in fake.requests if "body_read_at" in r], 30), dev.output[-3000:]
    assert _inbox(flash) == ["tg_{}.jpg".format(update)]
    dev.stop()
    again = bot()
    assert tg.wait_for(lambda: tg.sent(OWNER), 40), again.output[-3000:]
    assert tg.wait_for(lambda: tg.offset_confirmed >= update, 20)
    assert len(tg.sent(OWNER)) == 1 and "kill me" in tg.sent(OWNER)[0]["shown"]
    assert _session(flash)[0] == "[photo: kill me]" and len(_session(flash)) == 2
    assert _inbox(flash) == []
