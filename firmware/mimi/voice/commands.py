# The voice console commands: set_stt, set_stt_key, set_tts, set_tts_key, set_voice and voice_status (imported
# when one is typed).
from mimi import platform
from mimi.settings import KEY_DROPPED, mask
from mimi.voice.service import NS

OFF = "off"
MODES = ("off", "on", "auto")


def _say(text):
    platform.console_write(text + "\n")


def _shown(config, key):
    for row in config.shown():
        if row[0] == NS and row[1] == key:
            return row[2]
    return "?"


def set_stt(app, url, model=None):
    """set_stt <url|off> [model]: where voice notes are transcribed (POST <url>/v1/audio/transcriptions)."""
    config = app.config
    if url == OFF:
        dropped = config.unset(NS, "stt_url")  # its key goes with it (settings/)
        _say("speech-to-text off: voice notes get a one-line answer saying how to set it up{}".format(
            "; its key dropped with it" if dropped else ""))
        return
    if model:  # first: a key typed as the model is refused before anything is saved
        config.set(NS, "stt_model", model)
    dropped = config.set(NS, "stt_url", url)
    _say("speech-to-text: {} with {} (saved; in effect now){}{}".format(
        config.get(NS, "stt_url"), config.get(NS, "stt_model"), "; " + KEY_DROPPED if dropped else "",
        "" if config.is_set(NS, "stt_key") else "; set its key with set_stt_key <key> unless it needs none"))


def set_tts(app, url, model=None, voice=None):
    """set_tts <url|off> [model] [voice]: where replies are spoken (POST <url>/v1/audio/speech)."""
    config = app.config
    if url == OFF:
        dropped = config.unset(NS, "tts_url")
        _say("text-to-speech: the speech-to-text service's ({}){}".format(
            config.get(NS, "stt_url") or "none set", "; its own key dropped with its URL" if dropped else ""))
        return
    if model:  # first: a key typed as the model or the voice is refused before anything is saved
        config.set(NS, "tts_model", model)
    if voice:
        config.set(NS, "tts_voice", voice)
    dropped = config.set(NS, "tts_url", url)
    _say("text-to-speech: {} with {}, voice {} (saved; in effect now){}".format(
        config.get(NS, "tts_url"), config.get(NS, "tts_model"), config.get(NS, "tts_voice"),
        "; " + KEY_DROPPED if dropped else ""))


def _set_key(app, key, value, what):
    if value == OFF:
        app.config.unset(NS, key)
    else:
        app.config.set(NS, key, value)
    _say("{} key: {} (saved; in effect now)".format(what, _shown(app.config, key)))


def set_stt_key(app, value):
    _set_key(app, "stt_key", value, "speech-to-text")


def set_tts_key(app, value):
    _set_key(app, "tts_key", value, "text-to-speech")


def set_voice(app, mode):
    """set_voice on|off|auto: Telegram replies as voice notes always, never, or to a voice note."""
    mode = mode.lower()
    if mode not in MODES:
        raise ValueError("set_voice takes on, off or auto")
    app.config.set(NS, "reply", mode)
    _say("voice replies: {}{}".format(
        {"off": "off (text only)", "on": "every Telegram reply is also a voice note",
         "auto": "a voice note is answered with a voice note"}[mode],
        "" if mode == "off" or app.config.get(NS, "tts_url") or app.config.get(NS, "stt_url")
        else "; no speech service is set yet (set_tts <url>)"))


def status(app):
    """voice_status: the services, the mode, today's audio."""
    from mimi.voice import service

    config = app.config
    stt, tts = service.stt_settings(config), service.tts_settings(config)
    _say("speech-to-text: " + ("{} with {}, key {}".format(stt[0], stt[1], _shown(config, "stt_key")) if stt
                               else "not set (set_stt <url> [model])"))
    # the key text-to-speech sends: its own, or speech-to-text's when on the same host
    _say("text-to-speech: " + ("{} with {}, voice {}, key {}".format(tts[0], tts[1], tts[2], mask(tts[3])) if tts
        else "not set (set_tts <url> [model] [voice])"))
    _say("voice replies: {}; voice notes up to {} KB".format(config.get(NS, "reply"),
                                                              config.get(NS, "max_bytes") // 1024))
    store = app.budget.store
    store.roll()
    _say("today: {} s heard of {}, {} characters spoken of {} (0: no limit)".format(
        store.voice_today[0], config.get("safety_config", "day_audio_s"), store.voice_today[1],
        config.get("safety_config", "day_tts_chars")))
