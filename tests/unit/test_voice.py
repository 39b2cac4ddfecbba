# Voice notes (#24): the boot part, the multipart body streamed from flash, what is spoken of a reply, an Ogg
# file's length, the speech services' URLs, and the audio counted in usage under its own daily limits.
import json

import esp32
from stub_app import stub_app, typing
from support import NotImported, imported, read, remove_tree, tempdir, write

from mimi import heap
from mimi.settings import Config
from mimi.storage import files
from mimi.llm.text import Text
from mimi.safety.budget import Budget
from mimi.safety.usage_report import voice_lines
from mimi.safety.usage_store import UsageStore
from mimi.voice import multipart, ogg, service, tts, usage

JUNE_1 = 1748736000  # 2025-06-01 00:00 UTC
_CODE = ("mimi.voice.commands", "mimi.voice.heard", "mimi.voice.stt", "mimi.voice.tts", "mimi.voice.service",
         "mimi.voice.multipart", "mimi.voice.ogg")


class Clock:
    def __init__(self, now=JUNE_1 + 3600):
        self.now = now

    def __call__(self):
        return self.now


def test_the_voice_commands_come_at_boot_without_any_speech_code():
    app = stub_app("voice-boot")
    try:
        with NotImported("mimi.voice", *_CODE):
            with heap.scope("boot"):  # as the App's boot runs it
                from mimi import voice

                voice.setup(app)
            names = app.console.commands.names()
            for name in ("set_stt", "set_stt_key", "set_tts", "set_tts_key", "set_voice", "voice_status"):
                assert name in names
            for name in _CODE + ("mimi.voice",):  # the package itself is let go once its lines are in
                assert not imported(name), name
    finally:
        remove_tree(app.top)


def test_the_services_endpoints_from_a_base_url_or_the_endpoint_itself():
    assert service.endpoint("https://api.openai.com", "transcriptions") == \
        "https://api.openai.com/v1/audio/transcriptions"
    assert service.endpoint("https://api.groq.com/openai/", "transcriptions") == \
        "https://api.groq.com/openai/v1/audio/transcriptions"
    assert service.endpoint("http://192.168.1.20:8000/v1", "speech") == "http://192.168.1.20:8000/v1/audio/speech"
    assert service.endpoint("http://h/v1/audio/speech", "speech") == "http://h/v1/audio/speech"


def test_text_to_speech_falls_back_to_the_speech_to_text_service_and_key():
    esp32.set_flash_dir(None)
    config = Config()
    assert service.stt_settings(config) is None and service.tts_settings(config) is None
    config.override("voice_config", "stt_url", "https://api.openai.com")
    config.override("voice_config", "stt_key", "sk-one")
    assert service.tts_settings(config) == ("https://api.openai.com/v1/audio/speech", "tts-1", "alloy", "sk-one")
    config.override("voice_config", "tts_url", "http://tts.lan:8880")
    config.override("voice_config", "tts_key", "sk-two")
    found = service.tts_settings(config)
    assert (found[0], found[3]) == ("http://tts.lan:8880/v1/audio/speech", "sk-two")
    assert service.headers("sk-two", "application/json")["authorization"] == "Bearer sk-two"
    assert "authorization" not in service.headers("", "application/json")  # a local server without a key
    shown = dict(((ns, key), value) for ns, key, value in config.shown())
    assert "sk-two" not in shown[("voice_config", "tts_key")]


def test_a_multipart_body_carries_its_fields_and_the_file_in_pieces_of_known_length():
    folder = tempdir("voice-multipart")
    try:
        path = folder + "/note.ogg"
        data = bytes(range(256)) * 12 + b"OggS tail"
        write(path, data, "wb")
        content_type, pieces = multipart.body((("model", "whisper-1"), ("response_format", "json")), "file", path,
                                              'my "note".ogg', "audio/ogg")
        boundary = content_type.split("boundary=")[1]
        assert content_type.startswith("multipart/form-data; boundary=")
        sent, largest = [], 0
        for piece in pieces:
            for chunk in piece.chunks() if hasattr(piece, "chunks") else (piece,):
                sent.append(bytes(chunk))
                largest = max(largest, len(chunk)) if hasattr(piece, "chunks") else largest
        body = b"".join(sent)
        assert len(body) == sum(len(piece) for piece in pieces)  # the Content-Length, known beforehand
        assert largest <= 1024  # read from flash a piece at a time
        assert body.startswith(("--" + boundary + "\r\n").encode())
        assert b'name="model"\r\n\r\nwhisper-1\r\n' in body
        assert b'name="file"; filename="my _note_.ogg"\r\nContent-Type: audio/ogg\r\n\r\n' + data + b"\r\n" in body
        assert body.endswith(("\r\n--" + boundary + "--\r\n").encode())
        assert boundary.encode() not in data
    finally:
        remove_tree(folder)


def test_what_is_spoken_of_a_reply_plain_and_at_most_a_thousand_characters():
    said = tts.spoken_part("## Weather\n**Sunny**, see [the forecast](https://x.org/a_b) and `22 C`.")
    assert said == "Weather\nSunny, see the forecast and 22 C."
    long = Text(["First sentence is here. "] * 30 + ["x" * 5000])
    said = tts.spoken_part(long)
    assert len(said) <= tts.SPOKEN_MAX and said.endswith("is here.") and len(said) > tts.SPOKEN_MAX // 2
    words = tts.spoken_part("word " * 400)
    assert len(words) <= tts.SPOKEN_MAX and words.endswith("word")


def _page(granule, version=0):
    return b"OggS" + bytes([version, 4]) + granule.to_bytes(8, "little") + b"\x00" * 12 + b"\x01\x10" + b"a" * 16


def test_an_ogg_files_length_comes_from_its_last_page():
    folder = tempdir("voice-ogg")
    try:
        path = folder + "/a.ogg"
        with open(path, "wb") as f:  # written in parts: 20 KB at once needs a hole the unit heap may lack
            for part in (_page(0), b"z" * 4000, b"z" * 4000, b"z" * 4000, b"z" * 4000, b"z" * 4000,
                         _page(48000 * 7 + 312), b"OggS\x07junk-not-a-page"):
                f.write(part)
        size = files.size(path)
        assert ogg.is_ogg(path) and ogg.duration_s(path, size) == 8  # 7 s and the pre-skip: rounded up
        write(path, b"ID3" + b"m" * 100, "wb")
        assert not ogg.is_ogg(path) and ogg.duration_s(path, 103) is None
    finally:
        remove_tree(folder)


def _budget(folder, clock, **caps):
    esp32.set_flash_dir(None)
    config = Config()
    for key in caps:
        config.override("safety_config", key, caps[key])
    return Budget(config, UsageStore(folder + "/usage.json", clock), print, clock), config


def test_audio_is_counted_in_usage_kept_across_a_restart_and_held_to_its_daily_limits():
    folder = tempdir("voice-usage")
    try:
        clock = Clock()
        budget, config = _budget(folder, clock, day_audio_s=60, day_tts_chars=500)
        assert usage.refusal(budget, 45, 0) is None
        usage.spent(budget, 45, 0)
        usage.spent(budget, 0, 400)
        refusal = usage.refusal(budget, 20, 0)
        assert "seconds of voice notes are used up (45 of 60)" in refusal and "day_audio_s" in refusal
        assert "characters spoken are used up" in usage.refusal(budget, 0, 200)
        assert usage.refusal(budget, 15, 100) is None
        budget.store.save()
        assert json.loads(read(folder + "/usage.json"))["voice"] == [[45, 400], [45, 400]]
        again, _ = _budget(folder, clock)
        assert again.store.load() is None and again.store.voice_today == [45, 400]
        clock.now += 86400  # the next day: today's counts start again, the month's go on
        assert usage.refusal(again, 3600, 0) is None and again.store.voice_today == [0, 0]
        assert again.store.voice_month == [45, 400]
        lines = list(voice_lines([3600, 1000000], "today", lambda key: config.get("voice_config", key)))
        assert lines == ["  voice today: 3600 s of voice notes heard, 1000000 characters spoken, about $15.3600"]
        assert list(voice_lines([0, 0], "today", None)) == []
    finally:
        remove_tree(folder)


def test_a_usage_file_from_before_voice_loads_with_no_audio_counted():
    folder = tempdir("voice-old-usage")
    try:
        write(folder + "/usage.json", json.dumps({"v": 1, "day": "2025-06-01", "today": {}, "month": {},
                                                  "marks": {}}))
        store = UsageStore(folder + "/usage.json", Clock())
        assert store.load() is None and store.voice_today == [0, 0]
        store.save()
        assert "voice" not in json.loads(read(folder + "/usage.json"))  # nothing spoken: the file as before
    finally:
        remove_tree(folder)


# -- issue 41: a speech service's key stays with its host --
STT_KEY, TTS_KEY = "sk-stt-" + "S1" * 12, "sk-tts-" + "T2" * 12


def test_a_speech_services_key_is_dropped_when_its_url_goes_to_another_host_and_set_stt_says_so():
    app = stub_app("voice-key-host")
    try:
        from mimi import voice

        voice.setup(app)
        app.budget = Budget(app.config, UsageStore(app.top + "/usage.json", Clock()), print, Clock())

        typed = typing(app)
        config = app.config
        typed("set_stt https://api.openai.com whisper-1")
        typed("set_stt_key " + STT_KEY)
        out = typed("set_stt https://API.openai.com/v1")
        assert "dropped" not in out and config.get("voice_config", "stt_key") == STT_KEY  # the same host
        out = typed("set_stt http://whisper.lan:8000")
        assert out == "speech-to-text: http://whisper.lan:8000 with whisper-1 (saved; in effect now); key dropped: " \
                      "the host changed; set its key with set_stt_key <key> unless it needs none\n", out
        assert config.get("voice_config", "stt_key") == ""
        typed("set_stt_key " + STT_KEY)
        typed("set_tts https://api.openai.com")  # on another host: the speech-to-text key is not sent there
        assert service.tts_settings(config)[3] == ""
        assert "key (not set)" in typed("voice_status")
        typed("set_tts http://whisper.lan:8000/v1")  # the speech-to-text host: its key serves both
        assert service.tts_settings(config)[3] == STT_KEY
        typed("set_tts_key " + TTS_KEY)
        out = typed("config_set voice_config.tts_url http://tts.lan:8880")
        assert out.rstrip("\n").endswith("(saved; in effect now); key dropped: the host changed"), out
        assert config.get("voice_config", "tts_key") == "" and service.tts_settings(config)[3] == ""
        out = typed("set_stt https://api.openai.com " + STT_KEY)  # the key typed as the model: refused, unsaid
        assert out.startswith("error: ") and "looks like a key" in out and "S1S1" not in out, out
        assert config.get("voice_config", "stt_url") == "http://whisper.lan:8000"
    finally:
        remove_tree(app.top)
