# The fake speech API (transcriptions, speech) and the fake Telegram's voice notes and sendVoice, checked the
# way the real services check them.
import asyncio
import json

import aiohttp
import pytest

from host_sim.fake_speech import FakeSpeech
from host_sim.fake_telegram import FakeTelegram
from host_sim.ogg_audio import duration, ogg_opus

KEY = "sk-speech-host-test-0123456789"
TOKEN = "123:voice-host"


@pytest.fixture(scope="module")
def speech():
    with FakeSpeech(api_key=KEY) as server:
        yield server


def _post(url, form=None, body=None, key=KEY, headers=None):
    async def go():
        async with aiohttp.ClientSession() as session:
            sent = dict(headers or {})
            if key:
                sent["Authorization"] = "Bearer " + key
            async with session.post(url, data=form if form is not None else body, headers=sent) as response:
                return response.status, response.headers.get("Content-Type", ""), await response.read(), \
                    response.headers.get("Transfer-Encoding", "")
    return asyncio.run(go())


def _form(fields, file_field="file", data=b"OggS" + b"x" * 100, filename="voice.ogg", content_type="audio/ogg"):
    form = aiohttp.FormData()
    for name, value in fields:
        form.add_field(name, value)
    if file_field:
        form.add_field(file_field, data, filename=filename, content_type=content_type)
    return form


def test_a_transcription_checks_the_key_the_fields_and_the_file_and_answers_text(speech):
    url = speech.url + "/v1/audio/transcriptions"
    speech.script_transcript("hello there")
    status, kind, body, _ = _post(url, _form([("model", "whisper-1")]))
    assert (status, json.loads(body)) == (200, {"text": "hello there"}) and kind.startswith("application/json")
    status, _, body, _ = _post(url, _form([("model", "whisper-1")]), key="sk-wrong-0000000000")
    assert status == 401 and json.loads(body)["error"]["code"] == "invalid_api_key" and b"0000000000" not in body
    assert _post(url, _form([], ))[0] == 400  # no model
    assert "model" in json.loads(_post(url, _form([]))[2])["error"]["message"]
    status, _, body, _ = _post(url, _form([("model", "whisper-1")], file_field="upload"))
    assert status == 400 and json.loads(body)["error"]["param"] == "file"
    assert _post(url, _form([("model", "whisper-1")], filename="voice.txt"))[0] == 400
    assert _post(url, _form([("model", "whisper-1")], data=b"ID3 not ogg"))[0] == 400
    assert _post(url, _form([("model", "nope")]))[0] == 404
    speech.fail_next("transcriptions", 500)
    assert _post(url, _form([("model", "whisper-1")]))[0] == 500


def test_speech_answers_ogg_opus_chunked_and_checks_its_json(speech):
    url = speech.url + "/v1/audio/speech"
    good = {"model": "tts-1", "input": "Hello! " * 10, "voice": "alloy", "response_format": "opus"}
    status, kind, audio, encoding = _post(url, body=json.dumps(good), headers={"Content-Type": "application/json"})
    assert status == 200 and kind == "audio/ogg" and encoding == "chunked"
    assert audio.startswith(b"OggS") and duration(audio) == pytest.approx(70 / 15, abs=0.02)  # 20 ms packets
    for change in ({"voice": "robot"}, {"input": "x" * 4097}, {"input": ""}):
        status, _, body, _ = _post(url, body=json.dumps(dict(good, **change)),
                                   headers={"Content-Type": "application/json"})
        assert status == 400, change
    assert _post(url, body=json.dumps(good), key=None, headers={"Content-Type": "application/json"})[0] == 401


def test_the_fake_telegram_delivers_voice_notes_and_takes_send_voice_as_the_real_one():
    with FakeTelegram(token=TOKEN) as tg:
        note = ogg_opus(2)
        update = tg.voice_message(42, note, 2)
        base = tg.url + "/bot" + TOKEN
        status, _, body, _ = _post(base + "/getUpdates", body=b"{}", key=None, headers={"Content-Type": "application/json"})
        message = json.loads(body)["result"][0]["message"]
        assert message["voice"]["duration"] == 2 and message["voice"]["mime_type"] == "audio/ogg"
        assert tg.message_ids[update] == message["message_id"]
        reply = json.dumps({"message_id": message["message_id"]})
        status, _, body, _ = _post(base + "/sendVoice", _form(
            [("chat_id", "42"), ("caption", "<b>Hi</b>"), ("parse_mode", "HTML"), ("reply_parameters", reply)],
            "voice", note, "reply.ogg"), key=None)
        sent = json.loads(body)["result"]
        assert status == 200 and sent["voice"]["mime_type"] == "audio/ogg" and sent["caption"] == "Hi"
        assert sent["reply_to_message"]["message_id"] == message["message_id"]
        assert tg.sent_messages(42)[0]["data"] == note
        status, _, body, _ = _post(base + "/sendVoice", _form([("chat_id", "42")], "voice", b"ID3mp3", "a.mp3",
                                                              "audio/mpeg"), key=None)
        assert status == 200 and "document" in json.loads(body)["result"]  # not Ogg/Opus: not a voice note
        status, _, body, _ = _post(base + "/sendVoice", _form([("chat_id", "42"), ("caption", "x" * 1025)],
                                                              "voice", note), key=None)
        assert (status, json.loads(body)["description"]) == (400, "Bad Request: message caption is too long")
        status, _, body, _ = _post(base + "/sendVoice", _form([("chat_id", "42")], None), key=None)
        assert (status, json.loads(body)["description"]) == (400, "Bad Request: there is no voice in the request")
