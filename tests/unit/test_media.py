# Photos and files: the size picked, what is accepted, blocks streamed from flash, the placeholder, keep_file.
import binascii
import json

from support import remove_tree, tempdir, write

from mimi.agent import attachments
from mimi.agent.attachments import Refused
from mimi.llm.file_pieces import Base64File, TextFile
from mimi.telegram.media import pick_photo

KB = 1024


def _size(side, nbytes, n=0):
    return {"file_id": "f{}_{}".format(side, n), "width": side, "height": side * 3 // 4, "file_size": nbytes}


def test_the_largest_photo_size_within_both_limits_is_picked():
    sizes = [_size(90, 2 * KB), _size(320, 20 * KB), _size(800, 90 * KB), _size(1280, 190 * KB)]
    assert pick_photo(sizes, 200 * KB, 1568)["width"] == 1280
    assert pick_photo(sizes, 100 * KB, 1568)["width"] == 800  # bytes decide
    assert pick_photo(sizes, 200 * KB, 400)["width"] == 320  # pixels decide
    try:
        pick_photo([_size(1280, 900 * KB)], 200 * KB, 1568)
        raise AssertionError("no refusal")
    except Refused as exc:
        assert "200 KB" in str(exc) and "1568 px" in str(exc)


def test_which_documents_are_read_and_the_refusals_name_the_limit():
    assert attachments.document_kind("a.pdf", "application/pdf", 10, KB) == "pdf"
    assert attachments.document_kind("notes.md", "application/octet-stream", 10, KB) == "text"
    assert attachments.document_kind("x", "text/csv", 10, KB) == "text"
    for name, mime in (("a.zip", "application/zip"), ("song.mp3", "audio/mpeg")):
        try:
            attachments.document_kind(name, mime, 10, KB)
            raise AssertionError("accepted " + name)
        except Refused as exc:
            assert mime in str(exc) and "PDF" in str(exc)
    try:
        attachments.document_kind("big.pdf", "application/pdf", 3 * 1024 * KB, 1024 * KB)
        raise AssertionError("accepted a big file")
    except Refused as exc:
        assert "3 MB" in str(exc) and "limit of 1 MB" in str(exc)


def test_base64_is_read_from_flash_in_slices_and_its_length_known_beforehand():
    top = tempdir("media")
    try:
        for n in (0, 1, 2, 3, 1535, 1536, 1537, 5000):
            path = top + "/f{}.bin".format(n)
            data = bytes((i * 7) % 256 for i in range(n))
            write(path, data, "wb")
            piece = Base64File(path)
            encoded = b"".join(piece.chunks())
            assert len(piece) == len(encoded) == len(binascii.b2a_base64(data)) - 1
            assert binascii.a2b_base64(encoded) == data
    finally:
        remove_tree(top)


def test_a_text_file_becomes_the_inside_of_a_json_string_across_slices():
    top = tempdir("media")
    try:
        text = ("Zeile \u00e4\u00f6\u00fc \"quoted\" \\ tab\t \U0001F34F\n" * 200)
        path = top + "/t.txt"
        write(path, text.encode() + b"\xff broken byte", "wb")
        piece = TextFile(path)
        inside = b"".join(piece.chunks())
        assert len(piece) == len(inside)
        decoded = json.loads(b'"' + inside + b'"')
        assert decoded.startswith(text) and decoded.endswith(" broken byte")
    finally:
        remove_tree(top)


def test_placeholder_question_and_block():
    photo = attachments.media("image", "/x/a.jpg", "image/jpeg")
    pdf = attachments.media("pdf", "/x/r.pdf", "application/pdf", "r.pdf")
    assert attachments.placeholder("  What   plant? ", photo) == "[photo: What plant?]"
    assert attachments.placeholder("", photo) == "[photo]"
    assert attachments.placeholder("sum it up", pdf) == "[file r.pdf: sum it up]"
    assert len(attachments.placeholder("w " * 500, photo)) < attachments.PLACEHOLDER_MAX + 20
    assert attachments.question("", photo) == attachments.DEFAULT_PHOTO_QUESTION
    assert attachments.question("hi", pdf) == "hi"
    assert attachments.safe_name("../../etc/pa ss wd") == "pa_ss_wd"
    assert attachments.safe_name("...") == "file"


class _Holder:
    pass


def test_keep_file_moves_the_turns_file_under_files_and_never_overwrites():
    from mimi.storage import files
    from mimi.storage.layout import Flash
    from mimi.tools import media_tools
    from mimi.tools.turn import Turn

    top = tempdir("keep")
    try:
        app = _Holder()
        app.flash = Flash(top + "/data")
        app.flash.seed()
        tool = media_tools.KeepFile(app)
        turn = Turn("telegram", "42", {}, "operator")
        try:
            tool.run({}, turn)
            raise AssertionError("kept nothing")
        except Exception as exc:
            assert "no photo or file" in str(exc)
        for expected in ("files/receipt.jpg", "files/receipt-2.jpg"):
            path = attachments.inbox_path(app.flash.root, "tg_1", ".jpg")
            write(path, b"\xff\xd8\xff data", "wb")
            turn = Turn("telegram", "42", {"media": attachments.media("image", path, "image/jpeg")}, "operator")
            assert tool.run({"name": "receipt"}, turn) == "kept as " + expected
            assert not files.exists(path) and files.exists(app.flash.root + "/" + expected)
    finally:
        remove_tree(top)


def test_the_space_policy_gives_up_unread_received_files_first():
    from mimi.storage.layout import Flash
    from mimi.storage.space_free import Cleanup

    top = tempdir("space")
    try:
        flash = Flash(top + "/data")
        flash.seed()
        write(attachments.inbox_path(flash.root, "tg_7", ".jpg"), b"x", "wb")
        write(flash.sessions_dir + "/cli_console.jsonl", '{"role":"user","content":"hi","ts":1}\n')
        kinds = [kind for kind, path in Cleanup(flash, today=lambda: "2026-01-01").candidates()]
        assert kinds[0] == "media" and "session" in kinds
    finally:
        remove_tree(top)



def test_the_request_body_holds_the_file_as_valid_json_and_its_length_is_exact():
    from mimi.llm.claude import JsonBody

    top = tempdir("body")
    try:
        photo = top + "/p.jpg"
        write(photo, b"\xff\xd8\xff" + bytes(range(256)) * 30, "wb")
        notes = top + "/n.txt"
        write(notes, "caf\u00e9 \"menu\"\n\U0001F34F\n".encode() * 100, "wb")
        turn = {"role": "user", "content": [{"type": "text", "text": "[context]"}, {"type": "text", "text": "hi"}]}
        attachments.attach(turn, attachments.media("image", photo, "image/jpeg"))
        attachments.attach(turn, attachments.media("text", notes, "text/plain", "n.txt"))
        pieces = list(JsonBody([{"type": "text", "text": "sys"}], [turn], None, "m", 100).pieces())
        length = 0
        out = []
        for piece in pieces:
            length += len(piece)
            out.append(b"".join(piece.chunks()) if hasattr(piece, "chunks") else bytes(piece))
        body = b"".join(out)
        assert len(body) == length  # the Content-Length, counted without reading the files twice into RAM
        sent = json.loads(body)["messages"][0]["content"]
        assert [b["type"] for b in sent] == ["text", "image", "document", "text"]
        with open(photo, "rb") as f:
            assert binascii.a2b_base64(sent[1]["source"]["data"]) == f.read()
        assert sent[2]["source"]["data"] == "caf\u00e9 \"menu\"\n\U0001F34F\n" * 100 and sent[2]["title"] == "n.txt"
    finally:
        remove_tree(top)
