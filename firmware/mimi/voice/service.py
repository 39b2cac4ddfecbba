# The two OpenAI-compatible speech services as the board calls them: their URL, key, limits and errors.
from mimi import jsontext
from mimi.net import http
from mimi.platform import const

NS = "voice_config"
READ_TIMEOUT_S = const(30)  # silence while an answer streams in
DEADLINE_S = const(180)
_ERROR_MAX = const(2048)  # bytes of an error answer read for its message
SHOWN_MAX = const(160)  # characters of a service's own error message shown to the user


class VoiceError(Exception):
    """A speech service failed: the text says what happened, for the user (never a key)."""


def endpoint(base, path):
    """The endpoint under a base URL: 'https://api.openai.com' or '.../v1' + '/v1/audio/<path>'; a URL that
    already names the endpoint is kept."""
    base = base.rstrip("/")
    if base.endswith("/audio/" + path):
        return base
    return base + ("/audio/" if base.endswith("/v1") else "/v1/audio/") + path


def stt_settings(config):
    """(endpoint, model, key) of the speech-to-text service, or None while none is set."""
    base = config.get(NS, "stt_url")
    if not base:
        return None
    return endpoint(base, "transcriptions"), config.get(NS, "stt_model"), config.get(NS, "stt_key")


def tts_settings(config):
    """(endpoint, model, voice, key) of the text-to-speech service (the speech-to-text one's URL when its own is
    not set; its key when its own is not set and the URL is on the speech-to-text one's scheme, host and port),
    or None while neither is set."""
    own, stt = config.get(NS, "tts_url"), config.get(NS, "stt_url")
    base = own or stt
    if not base:
        return None
    key = config.get(NS, "tts_key")
    if not key and (not own or _same_origin(own, stt)):  # the speech-to-text key never goes to another host
        key = config.get(NS, "stt_key")
    return endpoint(base, "speech"), config.get(NS, "tts_model"), config.get(NS, "tts_voice"), key


def _same_origin(one, other):
    from mimi import url

    return url.origin(one) == url.origin(other)


def headers(key, content_type):
    out = {"content-type": content_type}
    if key:
        out["authorization"] = "Bearer " + key
    return out


async def post(config, what, url, key, content_type, body):
    """POST to a service; the Response of a 200, else VoiceError saying what went wrong (the key never in it).
    The service may think voice_config.timeout_s before it answers (a long note, a busy server)."""
    try:
        response = await http.request("POST", url, headers(key, content_type), body, READ_TIMEOUT_S,
                                      config.get(NS, "timeout_s"), DEADLINE_S)
    except http.HTTPError as exc:
        raise VoiceError("the {} service did not answer ({})".format(what, _scrub(str(exc), config)))
    if response.status == 200:
        return response
    try:
        detail = await _detail(response, config)
    finally:
        await response.aclose()
    if response.status in (401, 403):
        raise VoiceError("the {} service refused the key (HTTP {}); set it with set_{}_key <key>".format(
            what, response.status, "stt" if what == "speech-to-text" else "tts"))
    raise VoiceError("the {} service answered HTTP {}{}".format(what, response.status, detail))


async def _detail(response, config):
    """': <the service's own message>' from an error answer ({"error": {"message"}} or {"detail"}), or ''."""
    try:
        found = jsontext.loads(await response.read(_ERROR_MAX))
    except (ValueError, http.HTTPError):
        return ""
    if isinstance(found, dict):
        error = found.get("error")
        found = error.get("message") if isinstance(error, dict) else error or found.get("detail")
    if not isinstance(found, str) or not found.strip():
        return ""
    found = _scrub(" ".join(found.split()), config)
    return ": " + (found if len(found) <= SHOWN_MAX else found[: SHOWN_MAX - 3] + "...")


def _scrub(text, config):
    """A service's words with every secret masked (safety/masking.py): its key, and any other it may quote."""
    from mimi.safety import masking

    return masking.outside(text, masking.secrets(config))
