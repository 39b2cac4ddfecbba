# Voice notes both ways, end to end (#24): a Telegram voice note transcribed by the speech service, the transcript
# shown and sent to Claude; auto answers with sendVoice; failures fall back; no service gives a one-line hint.
import json

import pytest

from host_sim.fake_anthropic import text
from host_sim.fake_speech import FakeSpeech
from host_sim.ogg_audio import ogg_opus
from tests.e2e.conftest import OWNER_ID, TG_TOKEN
from tests.runtimes import RUNTIMES_WITH_ROMFS_TELEGRAM

OWNER = OWNER_ID
SPEECH_KEY = "sk-speech-e2e-" + "v" * 30 + "VOICETAIL"


@pytest.fixture(params=sorted(RUNTIMES_WITH_ROMFS_TELEGRAM))
def runtime(request):
    return RUNTIMES_WITH_ROMFS_TELEGRAM[request.param]


@pytest.fixture(scope="module")
def speech_server():
    server = FakeSpeech(api_key=SPEECH_KEY)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def speech(speech_server):
    speech_server.reset()
    yield speech_server
    speech_server.reset()


@pytest.fixture
def bot(owner_bot, speech):
    """A bot whose owner set the speech service (whisper-1) and its key."""
    def start(service=True):
        dev = owner_bot()
        if service:
            assert "whisper-1" in dev.command("set_stt {} whisper-1".format(speech.url))
            assert SPEECH_KEY not in dev.command("set_stt_key " + SPEECH_KEY)
        return dev
    return start


def _session(flash):
    path = flash / "data" / "sessions" / "telegram_42.jsonl"
    return [json.loads(line)["content"] for line in path.read_text().splitlines()] if path.exists() else []


def _inbox(flash):
    folder = flash / "data" / "files" / "inbox"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def _user_text(request):
    content = request["body"]["messages"][-1]["content"]
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


def test_a_voice_note_is_transcribed_shown_as_a_reply_and_sent_to_claude_as_text(bot, tg, fake, speech, flash):
    dev = bot()
    note = ogg_opus(3)
    speech.script_transcript("Turn on the garden lights at seven.")
    fake.script(text("Done: the garden lights go on at 19:00."))
    update = tg.voice_message(OWNER, note, 3)
    assert tg.wait_for(lambda: len(tg.sent(OWNER)) == 2, 40), dev.output[-3000:]
    heard, reply = tg.sent_messages(OWNER)
    assert heard["text"] == "\U0001f3a4 heard: Turn on the garden lights at seven."
    assert heard["reply_to_message"]["message_id"] == tg.message_ids[update]  # a reply to the voice note
    assert "garden lights go on" in reply["text"]
    (call,) = speech.requests
    assert call["endpoint"] == "transcriptions" and call["status"] == 200
    assert call["fields"] == {"model": "whisper-1", "response_format": "json"}
    assert call["upload"] == {"field": "file", "filename": "voice.ogg", "content_type": "audio/ogg"}
    assert call["data"] == note and call["content_length"] > len(note) and not call["chunked"]
    (request,) = fake.wait_requests(1)
    assert "[voice] Turn on the garden lights at seven." in _user_text(request)
    assert _session(flash)[0] == "[voice] Turn on the garden lights at seven."
    assert _inbox(flash) == []
    assert "3 s heard" in dev.command("voice_status")
    assert SPEECH_KEY not in dev.output and TG_TOKEN not in dev.output


def test_auto_answers_a_voice_note_with_a_voice_note_and_text_with_text(bot, tg, fake, speech, flash):
    dev = bot()
    assert "answered with a voice note" in dev.command("set_voice auto")
    speech.script_transcript("What is the capital of France?")
    fake.script(text("The capital of France is **Paris**."), text("Noted."))
    update = tg.voice_message(OWNER, ogg_opus(2), 2)
    assert tg.wait_for(lambda: len(tg.sent_messages(OWNER)) == 2, 40), dev.output[-3000:]
    voice = tg.sent_messages(OWNER)[1]
    assert voice["voice"]["mime_type"] == "audio/ogg" and voice["data"].startswith(b"OggS")
    assert voice["caption"] == "The capital of France is Paris."  # the Markdown as HTML, shown bold
    assert voice["caption_entities"][0]["type"] == "bold"
    assert voice["reply_to_message"]["message_id"] == tg.message_ids[update]
    assert voice["voice"]["duration"] >= 2
    spoken = speech.requests[1]
    assert spoken["endpoint"] == "speech" and spoken["body"] == {
        "model": "tts-1", "input": "The capital of France is Paris.", "voice": "alloy", "response_format": "opus"}
    assert voice["data"] == speech_audio(spoken)
    send_voice = [c for c in tg.calls if c["method"] == "sendVoice"][0]
    assert send_voice["params"]["voice"]["content_type"] == "audio/ogg" and send_voice["status"] == 200
    tg.user_message(OWNER, "thanks")  # typed: answered in text
    assert tg.wait_for(lambda: len(tg.sent_messages(OWNER)) == 3, 30)
    assert tg.sent_messages(OWNER)[2]["text"] == "Noted." and len(speech.requests) == 2
    assert "characters spoken" in dev.command("usage")


def speech_audio(record):
    from host_sim.fake_speech import CHARS_PER_SECOND

    return ogg_opus(max(1, len(record["body"]["input"]) / CHARS_PER_SECOND))


def test_a_failed_transcription_says_so_keeps_the_note_and_retry_sends_it_again(bot, tg, fake, speech, flash):
    dev = bot()
    note = ogg_opus(2)
    speech.fail_next("transcriptions", 503, "The engine is currently overloaded, please try again later")
    tg.voice_message(OWNER, note, 2)
    assert tg.wait_for(lambda: tg.sent(OWNER), 40), dev.output[-3000:]
    said = tg.sent(OWNER)[0]["shown"]
    assert "could not understand your voice note" in said and "HTTP 503" in said and "overloaded" in said
    assert "/retry" in said
    assert fake.requests == [] and _session(flash) == []  # no model call
    assert _inbox(flash) == ["voice_telegram_42.ogg"]
    speech.script_transcript("Remind me to water the plants.")
    fake.script(text("I will remind you."))
    tg.user_message(OWNER, "/retry")
    assert tg.wait_for(lambda: len(tg.sent(OWNER)) == 3, 40), dev.output[-3000:]
    assert tg.sent(OWNER)[1]["shown"] == "\U0001f3a4 heard: Remind me to water the plants."
    assert speech.requests[-1]["data"] == note
    assert "[voice] Remind me to water the plants." in _user_text(fake.wait_requests(1)[0])
    assert _inbox(flash) == []
    tg.user_message(OWNER, "/retry")
    assert tg.wait_for(lambda: len(tg.sent(OWNER)) == 4, 30)
    assert "No voice note of yours is waiting" in tg.sent(OWNER)[3]["shown"]


def test_a_refused_key_a_timeout_and_a_failed_speech_fall_back_clearly(bot, tg, fake, speech, flash):
    dev = bot()
    dev.command("set_stt_key sk-wrong-key-0000000000000000000000")
    tg.voice_message(OWNER, ogg_opus(1), 1)
    assert tg.wait_for(lambda: tg.sent(OWNER), 40), dev.output[-3000:]
    assert "refused the key (HTTP 401)" in tg.sent(OWNER)[0]["shown"] and "set_stt_key" in tg.sent(OWNER)[0]["shown"]
    dev.command("set_stt_key " + SPEECH_KEY)
    assert "timeout_s = 5" in dev.command("config_set voice_config.timeout_s 5")
    speech.stall_next("transcriptions", 15)  # the service thinks longer than the board waits
    tg.voice_message(OWNER, ogg_opus(1), 1)
    assert tg.wait_for(lambda: len(tg.sent(OWNER)) == 2, 40), dev.output[-3000:]
    said = tg.sent(OWNER)[1]["shown"]
    assert "speech-to-text service did not answer" in said and "/retry" in said, said
    assert fake.requests == []
    dev.command("set_voice on")
    speech.script_transcript("Hello there.")
    speech.cut_next("speech")  # the speech breaks off: the reply comes as text, and says why
    fake.script(text("Hello! How can I help?"))
    tg.user_message(OWNER, "/retry")
    assert tg.wait_for(lambda: len(tg.sent(OWNER)) == 5, 40), dev.output[-3000:]
    shown = [m["shown"] for m in tg.sent(OWNER)]
    assert shown[2] == "\U0001f3a4 heard: Hello there." and shown[3] == "Hello! How can I help?"
    assert "could not speak this reply" in shown[4]
    assert not [c for c in tg.calls if c["method"] == "sendVoice"]
    assert SPEECH_KEY not in dev.output and "sk-wrong-key" not in "".join(shown)


def test_no_service_set_gives_a_one_line_hint_and_no_model_call(bot, tg, fake, speech, flash):
    dev = bot(service=False)
    tg.voice_message(OWNER, ogg_opus(1), 1)
    assert tg.wait_for(lambda: tg.sent(OWNER), 40), dev.output[-3000:]
    (hint,) = tg.sent(OWNER)
    assert "set_stt <url>" in hint["shown"] and "\n" not in hint["shown"]
    assert fake.requests == [] and speech.requests == [] and _inbox(flash) == []


def test_an_over_limit_voice_note_is_refused_before_its_download(bot, tg, fake, speech, flash):
    dev = bot()
    dev.command("config_set voice_config.max_bytes 10240")
    tg.voice_message(OWNER, ogg_opus(4), 4)
    assert tg.wait_for(lambda: tg.sent(OWNER), 30), dev.output[-3000:]
    assert "over my limit of 10 KB" in tg.sent(OWNER)[0]["shown"]
    assert tg.downloads == [] and speech.requests == [] and fake.requests == []


def test_an_audio_file_attached_in_the_web_chat_is_heard_too(gateway, fake, speech, flash):  # noqa: F811
    import asyncio

    from websockets.asyncio.client import connect

    from tests.e2e.test_media_webchat import _Chat

    gateway.device.command("set_stt {}".format(speech.url))
    gateway.device.command("set_stt_key " + SPEECH_KEY)
    note = ogg_opus(2)
    speech.script_transcript("Add milk to the shopping list.")
    fake.script(text("Milk is on the list."))

    async def main():
        async with connect(gateway.url()) as ws:  # an upload is the connection's that made it (its hello's key)
            chat = await _Chat(gateway, ws).start()
            status, answer = await chat.post("memo.ogg", "audio/ogg", note)
            assert status == 200 and answer["kind"] == "audio"
            return await chat.send({"type": "attach", "attachment": answer["id"], "content": ""})

    frames = asyncio.run(main())
    assert {"type": "notice", "content": "\U0001f3a4 heard: Add milk to the shopping list.",
            "chat_id": "web_media"} in frames
    assert frames[-1]["type"] == "response" and frames[-1]["content"] == "Milk is on the list."
    assert speech.requests[0]["upload"]["filename"] == "memo.ogg" and speech.requests[0]["data"] == note
    assert "[voice] Add milk to the shopping list." in _user_text(fake.wait_requests(1)[0])
    assert not (flash / "data" / "files" / "inbox").exists() or not list((flash / "data" / "files" / "inbox").iterdir())
