# The fake Telegram Bot API answers like the real one, over HTTP, faults included.
import http.client
import json
import os
import threading
import time
from urllib.parse import urlencode

import pytest

from host_sim.fake_telegram import FakeTelegram

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKEN = "123456:TEST-token"
NOT_MODIFIED = ("Bad Request: message is not modified: specified new message content and reply "
                "markup are exactly the same as a current content and reply markup of the message")
WEBHOOK_CONFLICT = ("Conflict: can't use getUpdates method while webhook is active; use "
                    "deleteWebhook to delete the webhook first")
TERMINATED = ("Conflict: terminated by other getUpdates request; make sure that only one bot "
              "instance is running")


@pytest.fixture
def fake():
    with FakeTelegram() as server:
        yield server


def _arg(value):
    return value if isinstance(value, str) else json.dumps(value)


def exchange(url, method, params=None, how="json", token=TOKEN, timeout=10, context=None):
    """(status, lower-case headers, JSON body or raw text) of one Bot API call."""
    host, port = url.split("://")[1].rsplit(":", 1)
    path, body, headers, verb = "/bot{}/{}".format(token, method), None, {}, "POST"
    raw = isinstance(params, bytes)
    encoded = "" if raw else urlencode({k: _arg(v) for k, v in (params or {}).items()})
    if how == "get":
        verb, path = "GET", path + ("?" + encoded if encoded else "")
    elif how == "form":
        body, headers["Content-Type"] = encoded.encode(), "application/x-www-form-urlencoded"
    else:
        body = params if raw else json.dumps(params or {}).encode()
        headers["Content-Type"] = "application/json"
    if context is None:
        conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    else:
        conn = http.client.HTTPSConnection(host, int(port), timeout=timeout, context=context)
    try:
        conn.request(verb, path, body, headers)
        response = conn.getresponse()
        data = response.read()
        try:
            parsed = json.loads(data)
        except ValueError:
            parsed = data.decode("utf-8", "replace")
        return response.status, {k.lower(): v for k, v in response.getheaders()}, parsed
    finally:
        conn.close()


def api(fake, method, **params):
    """(status, body) of a JSON call."""
    status, _, body = exchange(fake.url, method, params)
    return status, body


def refused(code, description):
    return code, {"ok": False, "error_code": code, "description": description}


def in_background(fn, *args, **kwargs):
    """Run fn in a thread; returns a list that receives its result, and the thread."""
    out = []
    worker = threading.Thread(target=lambda: out.append(fn(*args, **kwargs)), daemon=True)
    worker.start()
    return out, worker


# ---- routing and the envelope ----

def test_get_me_answers_in_the_success_envelope(fake):
    status, body = api(fake, "getMe")
    assert status == 200 and body["ok"] is True
    assert body["result"]["id"] == 123456 and body["result"]["is_bot"] is True


def test_a_wrong_token_is_401_unauthorized(fake):
    status, _, body = exchange(fake.url, "getMe", token="123456:WRONG")
    assert (status, body) == refused(401, "Unauthorized")


def test_an_unknown_method_is_404_method_not_found(fake):
    assert api(fake, "sendTelepathy") == refused(404, "Not Found: method not found")
    assert api(fake, "") == refused(404, "Not Found: method not found")


def test_method_names_are_case_insensitive(fake):
    assert api(fake, "GETME")[0] == 200
    assert fake.calls[-1]["method"] == "getMe"


def test_a_path_outside_bot_token_is_not_found(fake):
    host, port = fake.url.split("://")[1].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    conn.request("GET", "/getMe")
    response = conn.getresponse()
    assert (response.status, json.loads(response.read())) == refused(404, "Not Found")
    conn.close()


def test_query_form_and_json_arguments_all_work(fake):
    fake.add_chat(42)
    for how in ("get", "form", "json"):
        status, _, body = exchange(fake.url, "sendMessage", {"chat_id": 42, "text": how}, how)
        assert status == 200 and body["result"]["text"] == how
    assert [m["text"] for m in fake.sent(42)] == ["get", "form", "json"]


def test_a_json_body_that_does_not_parse_is_400(fake):
    status, _, body = exchange(fake.url, "getMe", b"{not json")
    assert (status, body) == refused(400, "Bad Request: can't parse JSON object")


def test_calls_are_recorded_with_json_fields_decoded(fake):
    fake.add_chat(42)
    markup = {"inline_keyboard": [[{"text": "Yes", "callback_data": "y"}]]}
    exchange(fake.url, "sendMessage", {"chat_id": 42, "text": "q", "reply_markup": markup},
             "form")
    exchange(fake.url, "getUpdates", {"allowed_updates": ["message"]}, "get")
    first, second = fake.calls
    assert first["method"] == "sendMessage" and first["status"] == 200
    assert first["params"] == {"chat_id": "42", "text": "q", "reply_markup": markup}
    assert first["response"]["result"]["reply_markup"] == markup
    assert second["params"]["allowed_updates"] == ["message"]
    assert abs(first["time"] - time.time()) < 5


# ---- getUpdates ----

def test_updates_arrive_in_the_documented_shape(fake):
    first = fake.user_message(42, "hi", username="a")
    second = fake.callback_query(42, "y", message_id=6)
    third = fake.non_text_message(42, "photo", caption="look")
    fake.non_text_message(42, "sticker")
    assert second == first + 1 and third == first + 2
    status, body = api(fake, "getUpdates")
    updates = body["result"]
    assert status == 200 and [u["update_id"] for u in updates] == list(range(first, first + 4))
    message = updates[0]["message"]
    assert message["text"] == "hi" and message["chat"] == {
        "id": 42, "type": "private", "first_name": "A", "username": "a"}
    assert message["from"]["id"] == 42 and message["from"]["is_bot"] is False
    query = updates[1]["callback_query"]
    assert query["data"] == "y" and query["message"]["message_id"] == 6
    assert query["from"]["id"] == 42 and isinstance(query["id"], str)
    assert updates[2]["message"]["caption"] == "look" and "text" not in updates[2]["message"]
    assert "sticker" in updates[3]["message"] and "text" not in updates[3]["message"]


def test_an_offset_confirms_earlier_updates_for_good(fake):
    first = fake.user_message(42, "one")
    fake.user_message(42, "two")
    assert len(api(fake, "getUpdates")[1]["result"]) == 2
    assert len(api(fake, "getUpdates")[1]["result"]) == 2  # not confirmed yet: sent again
    assert fake.offset_confirmed == 0
    rest = api(fake, "getUpdates", offset=first + 1)[1]["result"]
    assert [u["message"]["text"] for u in rest] == ["two"]
    assert fake.offset_confirmed == first
    assert api(fake, "getUpdates", offset=first + 2)[1]["result"] == []
    assert api(fake, "getUpdates")[1]["result"] == []  # confirmed ones never come back
    assert fake.offset_confirmed == first + 1


def test_a_negative_offset_keeps_only_the_last_updates(fake):
    ids = [fake.user_message(42, str(i)) for i in range(4)]
    assert [u["update_id"] for u in api(fake, "getUpdates", offset=-1)[1]["result"]] == ids[3:]
    assert [u["update_id"] for u in api(fake, "getUpdates")[1]["result"]] == ids[3:]


def test_limit_defaults_to_100_and_is_clamped_to_1_100(fake):
    for i in range(105):
        fake.user_message(42, str(i))
    assert len(api(fake, "getUpdates")[1]["result"]) == 100
    assert len(api(fake, "getUpdates", limit=3)[1]["result"]) == 3
    assert len(api(fake, "getUpdates", limit=0)[1]["result"]) == 1
    assert len(api(fake, "getUpdates", limit=500)[1]["result"]) == 100


def test_a_long_poll_is_held_for_the_timeout_then_answered_empty(fake):
    started = time.monotonic()
    assert api(fake, "getUpdates", timeout=1) == (200, {"ok": True, "result": []})
    assert 0.9 <= time.monotonic() - started < 3
    started = time.monotonic()
    assert api(fake, "getUpdates")[1]["result"] == []  # timeout defaults to 0
    assert time.monotonic() - started < 0.5


def test_a_long_poll_returns_as_soon_as_an_update_arrives(fake):
    out, worker = in_background(api, fake, "getUpdates", timeout=20)
    time.sleep(0.3)
    assert out == []  # still held
    started = time.monotonic()
    fake.user_message(42, "wake up")
    worker.join(5)
    assert time.monotonic() - started < 1
    assert out[0][1]["result"][0]["message"]["text"] == "wake up"


def test_allowed_updates_filters_new_updates_and_is_remembered(fake):
    before = fake.user_message(42, "made before the filter")
    api(fake, "getUpdates", offset=before, allowed_updates=["callback_query"])
    assert fake.user_message(42, "filtered") is None
    query = fake.callback_query(42, "y", 1)
    result = api(fake, "getUpdates")[1]["result"]  # no allowed_updates: the filter stays
    assert [u["update_id"] for u in result] == [before, query]
    assert fake.user_message(42, "still filtered") is None
    api(fake, "getUpdates", allowed_updates=[])  # empty: the default set again
    assert fake.user_message(42, "back") is not None
    assert fake.add_update("chat_member", {"chat": {"id": -1}}) is None  # not by default


def test_a_second_poll_terminates_the_held_one_with_409(fake):
    out, worker = in_background(exchange, fake.url, "getUpdates", {"timeout": 20})
    # held from the moment its parameters are read; the second poll comes after that, however slow the thread
    assert fake.wait_for(lambda: [c for c in fake.calls if c["params"] == {"timeout": 20}], 5)
    assert api(fake, "getUpdates")[0] == 200
    worker.join(5)
    assert (out[0][0], out[0][2]) == refused(409, TERMINATED)


def test_a_webhook_blocks_get_updates_until_deleted(fake):
    assert api(fake, "setWebhook", url="https://example.org/hook")[1] == {
        "ok": True, "result": True, "description": "Webhook was set"}
    assert fake.webhook_url == "https://example.org/hook"
    assert api(fake, "getUpdates") == refused(409, WEBHOOK_CONFLICT)
    assert api(fake, "deleteWebhook")[1]["description"] == "Webhook was deleted"
    assert api(fake, "deleteWebhook")[1]["description"] == "Webhook is already deleted"
    assert api(fake, "getUpdates")[0] == 200


def test_delete_webhook_can_drop_pending_updates(fake):
    fake.user_message(42, "old")
    api(fake, "deleteWebhook", drop_pending_updates=True)
    assert api(fake, "getUpdates")[1]["result"] == []


# ---- sendMessage ----

def test_unknown_chats_are_not_found_until_a_user_writes_or_add_chat(fake):
    assert api(fake, "sendMessage", chat_id=42, text="x") == refused(
        400, "Bad Request: chat not found")
    fake.user_message(42, "hi")
    fake.add_chat(-1001234)
    assert api(fake, "sendMessage", chat_id=42, text="x")[0] == 200
    status, body = api(fake, "sendMessage", chat_id=-1001234, text="x")
    assert status == 200 and body["result"]["chat"]["type"] == "supergroup"
    assert api(fake, "sendMessage", text="x") == refused(400, "Bad Request: chat_id is empty")


def test_message_ids_increase_per_chat(fake):
    fake.add_chat(1)
    fake.add_chat(2)
    ids = [api(fake, "sendMessage", chat_id=c, text="x")[1]["result"]["message_id"]
           for c in (1, 1, 2)]
    assert ids[1] == ids[0] + 1 and ids[2] == 1


def test_empty_text_is_refused_even_when_only_markup_or_blanks(fake):
    fake.add_chat(42)
    empty = refused(400, "Bad Request: message text is empty")
    assert api(fake, "sendMessage", chat_id=42) == empty
    assert api(fake, "sendMessage", chat_id=42, text="") == empty
    assert api(fake, "sendMessage", chat_id=42, text=" \n ") == empty
    assert api(fake, "sendMessage", chat_id=42, text="<b></b>", parse_mode="HTML") == empty


def test_length_is_counted_in_code_points_after_parsing(fake):
    fake.add_chat(42)
    too_long = refused(400, "Bad Request: message is too long")
    assert api(fake, "sendMessage", chat_id=42, text="a" * 4096)[0] == 200
    assert api(fake, "sendMessage", chat_id=42, text="a" * 4097) == too_long
    wrapped = "<b>{}</b>".format("a" * 4096)
    assert api(fake, "sendMessage", chat_id=42, text=wrapped, parse_mode="HTML")[0] == 200
    assert api(fake, "sendMessage", chat_id=42, text="<b>{}</b>".format("a" * 4097),
               parse_mode="HTML") == too_long
    assert api(fake, "sendMessage", chat_id=42, text="&lt;" * 4096, parse_mode="HTML")[0] == 200
    assert api(fake, "sendMessage", chat_id=42, text="\U0001F600" * 4096)[0] == 200
    assert api(fake, "sendMessage", chat_id=42, text="\U0001F600" * 4097) == too_long


def test_html_is_parsed_into_text_and_entities(fake):
    fake.add_chat(42)
    source = ('\U0001F600 <b>bold</b> <a href="https://x.org/?a=1&amp;b=2">link</a> &lt;3 '
              '<pre><code class="language-python">x = 1</code></pre>')
    status, body = api(fake, "sendMessage", chat_id=42, text=source, parse_mode="HTML")
    result = body["result"]
    assert status == 200 and result["text"] == "\U0001F600 bold link <3 x = 1"
    by_type = {e["type"]: e for e in result["entities"]}
    assert (by_type["bold"]["offset"], by_type["bold"]["length"]) == (3, 4)  # the emoji is 2
    assert by_type["text_link"]["url"] == "https://x.org/?a=1&b=2"
    assert by_type["pre"]["language"] == "python" and "code" not in by_type
    assert fake.sent(42)[0] == {"message_id": 1, "text": source, "parse_mode": "HTML",
                                "shown": result["text"], "reply_markup": None}


def test_bad_html_is_refused_with_cant_parse_entities(fake):
    fake.add_chat(42)
    for bad in ("a < b", "fish & chips", "<b>open", "<b><i>x</b></i>", "x</b>", "<br>",
                "<span>x</span>", "<b", "&bogus;", '<a href="x>y</a>'):
        status, body = api(fake, "sendMessage", chat_id=42, text=bad, parse_mode="HTML")
        assert status == 400, bad
        assert body["description"].startswith("Bad Request: can't parse entities: "), bad
    assert fake.sent(42) == []
    assert api(fake, "sendMessage", chat_id=42, text="a < b")[0] == 200  # plain text: fine


def test_markdown_v2_requires_reserved_characters_escaped(fake):
    fake.add_chat(42)
    status, body = api(fake, "sendMessage", chat_id=42, text="Done.", parse_mode="MarkdownV2")
    assert status == 400 and body["description"] == (
        "Bad Request: can't parse entities: Character '.' is reserved and must be escaped "
        "with the preceding '\\'")
    status, body = api(fake, "sendMessage", chat_id=42, text="*Done*\\.",
                       parse_mode="MarkdownV2")
    assert status == 200 and body["result"]["text"] == "Done."
    assert body["result"]["entities"] == [{"type": "bold", "offset": 0, "length": 4}]


def test_an_unknown_parse_mode_is_refused(fake):
    fake.add_chat(42)
    assert api(fake, "sendMessage", chat_id=42, text="x", parse_mode="BBCode") == refused(
        400, "Bad Request: unsupported parse_mode")


def test_inline_keyboards_are_validated(fake):
    fake.add_chat(42)

    def send(button):
        markup = {"inline_keyboard": [[dict({"text": "B"}, **button)]]}
        return api(fake, "sendMessage", chat_id=42, text="q", reply_markup=markup)

    assert send({"callback_data": "\u00e9" * 32})[0] == 200  # 64 bytes
    assert send({"callback_data": "x" * 65}) == refused(400, "Bad Request: BUTTON_DATA_INVALID")
    assert send({"callback_data": "\u00e9" * 33}) == refused(  # 33 characters, 66 bytes
        400, "Bad Request: BUTTON_DATA_INVALID")
    assert send({"callback_data": ""}) == refused(400, "Bad Request: BUTTON_DATA_INVALID")
    assert send({})[1]["description"].startswith("Bad Request: can't parse inline keyboard")
    assert api(fake, "sendMessage", chat_id=42, text="q", reply_markup="{nope")[0] == 400


# ---- editMessageText, drafts, actions, callbacks ----

def test_edits_change_the_message_and_identical_edits_are_refused(fake):
    fake.add_chat(42)
    message_id = api(fake, "sendMessage", chat_id=42, text="draft")[1]["result"]["message_id"]
    status, body = api(fake, "editMessageText", chat_id=42, message_id=message_id, text="final")
    assert status == 200 and body["result"]["text"] == "final" and "edit_date" in body["result"]
    assert [m["text"] for m in fake.sent(42)] == ["final"]
    assert api(fake, "editMessageText", chat_id=42, message_id=message_id,
               text="final") == refused(400, NOT_MODIFIED)
    assert api(fake, "editMessageText", chat_id=42, message_id=message_id,
               text="<b>final</b>", parse_mode="HTML")[0] == 200  # new entities: modified
    assert api(fake, "editMessageText", chat_id=42, message_id=99, text="x") == refused(
        400, "Bad Request: message to edit not found")


def test_a_users_message_cannot_be_edited(fake):
    fake.user_message(42, "mine")
    assert api(fake, "editMessageText", chat_id=42, message_id=1, text="x") == refused(
        400, "Bad Request: message can't be edited")


def test_drafts_are_recorded_and_validated(fake):
    fake.user_message(42, "hi")
    fake.add_chat(-5)
    assert api(fake, "sendMessageDraft", chat_id=42, draft_id=7, text="Thi") == (
        200, {"ok": True, "result": True})
    assert api(fake, "sendMessageDraft", chat_id=42, draft_id=7, text="")[0] == 200
    assert [(d["draft_id"], d["text"]) for d in fake.drafts(42)] == [(7, "Thi"), (7, "")]
    assert api(fake, "sendMessageDraft", chat_id=42, draft_id=0, text="x")[0] == 400
    assert api(fake, "sendMessageDraft", chat_id=-5, draft_id=1, text="x")[0] == 400
    assert api(fake, "sendMessageDraft", chat_id=42, draft_id=1, text="a" * 4097)[0] == 400


def test_drafts_can_be_refused_like_an_older_server():
    with FakeTelegram(drafts="not_found") as fake:
        fake.add_chat(42)
        assert api(fake, "sendMessageDraft", chat_id=42, draft_id=1, text="x") == refused(
            404, "Not Found: method not found")
    with FakeTelegram(drafts="bad_request") as fake:
        fake.add_chat(42)
        assert api(fake, "sendMessageDraft", chat_id=42, draft_id=1, text="x") == refused(
            400, "Bad Request: method is not available")
        assert fake.drafts(42) == []


def test_chat_actions_are_recorded(fake):
    fake.add_chat(42)
    assert api(fake, "sendChatAction", chat_id=42, action="typing") == (
        200, {"ok": True, "result": True})
    assert api(fake, "sendChatAction", chat_id=42, action="dancing")[0] == 400
    assert fake.actions(42) == ["typing"]


def test_callback_queries_are_answered_once(fake):
    fake.callback_query(42, "y", message_id=1)
    query_id = api(fake, "getUpdates")[1]["result"][0]["callback_query"]["id"]
    too_old = refused(400, "Bad Request: query is too old and response timeout expired or "
                           "query ID is invalid")
    assert api(fake, "answerCallbackQuery", callback_query_id=query_id, text="ok") == (
        200, {"ok": True, "result": True})
    assert fake.callback_answers == [{"callback_query_id": query_id, "text": "ok",
                                      "show_alert": False}]
    assert api(fake, "answerCallbackQuery", callback_query_id=query_id) == too_old
    assert api(fake, "answerCallbackQuery", callback_query_id="nope") == too_old


# ---- group chats: mentions and replies, as Telegram shapes them ----

def test_mentions_and_commands_become_entities_counted_in_utf16_units(fake):
    fake.user_message(42, "\U0001F600 hi @mimi_test_bot and @b", chat_id=-100555)
    fake.user_message(42, "/new@mimi_test_bot now", chat_id=-100555)
    fake.user_message(42, "mail me at a@example.com", chat_id=-100555)
    first, second, third = [u["message"] for u in api(fake, "getUpdates")[1]["result"]]
    assert first["chat"]["type"] == "supergroup" and first["chat"]["id"] == -100555
    # the emoji is two UTF-16 units; "@b" is too short to be a username
    assert first["entities"] == [{"offset": 6, "length": 14, "type": "mention"}]
    assert second["entities"] == [{"offset": 0, "length": 18, "type": "bot_command"}]
    assert "entities" not in third


def test_a_reply_carries_the_message_it_answers_one_level_deep(fake):
    fake.add_chat(-5, "Family")
    status, sent = api(fake, "sendMessage", chat_id=-5, text="I am the bot")
    bot_message = sent["result"]["message_id"]
    fake.user_message(7, "thanks", chat_id=-5, reply_to=bot_message)
    update = api(fake, "getUpdates")[1]["result"][0]["message"]
    assert update["chat"] == {"id": -5, "type": "group", "title": "Family"}
    replied = update["reply_to_message"]
    assert replied["message_id"] == bot_message and replied["text"] == "I am the bot"
    assert replied["from"]["is_bot"] is True and replied["from"]["username"] == fake.bot_username
    fake.user_message(7, "again", chat_id=-5, reply_to=update["message_id"])
    nested = api(fake, "getUpdates", offset=update_id_after(fake))[1]["result"][-1]["message"]
    assert nested["reply_to_message"]["message_id"] == update["message_id"]
    assert "reply_to_message" not in nested["reply_to_message"]
    with pytest.raises(ValueError):
        fake.user_message(7, "to nothing", chat_id=-5, reply_to=999)


def update_id_after(fake):
    return api(fake, "getUpdates")[1]["result"][0]["update_id"] + 1


# ---- text as Telegram writes and reads it ----

def test_non_ascii_arrives_escaped_with_surrogate_pairs_as_telegram_sends_it(fake):
    fake.user_message(42, "\U0001f4b0 \u041a\u0430\u0441\u0441\u0430 \U0001f355 https://x.io/a")
    conn = http.client.HTTPConnection("127.0.0.1", int(fake.url.rsplit(":", 1)[1]), timeout=5)
    try:
        conn.request("GET", "/bot{}/getUpdates".format(TOKEN))
        raw = conn.getresponse().read()
    finally:
        conn.close()
    assert raw.isascii()
    assert b'"text":"\\ud83d\\udcb0 \\u041a\\u0430\\u0441\\u0441\\u0430 \\ud83c\\udf55 https:\\/\\/x.io\\/a"' in raw
    assert json.loads(raw)["result"][0]["message"]["text"].startswith("\U0001f4b0 \u041a")


def test_text_that_is_not_utf8_is_refused_as_telegram_does(fake):
    fake.user_message(42, "hi")
    body = b'{"chat_id":42,"text":"pizza \xed\xa0\xbc\xed\xbd\x95"}'  # a surrogate pair as raw halves
    status, _, answer = exchange(fake.url, "sendMessage", body)
    assert (status, answer["description"]) == (400, "Bad Request: strings must be encoded in UTF-8")
    status, _, answer = exchange(fake.url, "sendMessage", b'{"chat_id":42,"text":"half \\ud83c"}')
    assert (status, answer["description"]) == (400, "Bad Request: strings must be encoded in UTF-8")
    status, _, answer = exchange(fake.url, "sendMessage", b'{"chat_id":42,"text":"whole \\ud83c\\udf55"}')
    assert status == 200 and answer["result"]["text"] == "whole \U0001f355"
    assert [m["text"] for m in fake.sent(42)] == ["whole \U0001f355"]
