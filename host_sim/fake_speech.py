# A fake OpenAI-compatible speech API: POST /v1/audio/transcriptions (multipart, as the real services check it)
# and POST /v1/audio/speech (Ogg/Opus bytes, chunked), with keys, limits and scripted faults.
import argparse
import asyncio
import json
import threading
import time
from collections import deque

from aiohttp import web

from host_sim.background_server import BackgroundServer, drop_connection
from host_sim.ogg_audio import ogg_opus

FILE_MAX = 25 * 1024 * 1024  # OpenAI's limit for an uploaded audio file
INPUT_MAX = 4096  # characters of speech input
FORMATS = ("flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm")
STT_MODELS = ("whisper-1", "gpt-4o-mini-transcribe", "gpt-4o-transcribe", "whisper-large-v3-turbo",
              "whisper-large-v3")
TTS_MODELS = ("tts-1", "tts-1-hd", "gpt-4o-mini-tts")
VOICES = ("alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer", "verse")
SPEECH_FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")
CHARS_PER_SECOND = 15  # how long the fake's speech lasts


def _error(status, message, code=None, param=None):
    body = {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}
    return web.json_response(body, status=status)


class FakeSpeech(BackgroundServer):
    """Both endpoints on one port. `script_transcript(text)` queues what is heard; `fail_next(endpoint, status)`,
    `stall_next(endpoint, seconds)` and `cut_next(endpoint)` script faults; `requests` records each call."""

    name = "fake-speech"

    def __init__(self, api_key="sk-speech-test-key-0123456789SECRET", ssl_context=None, host="127.0.0.1", port=0):
        super().__init__(ssl_context, host, port)
        self.api_key = api_key
        self._lock = threading.Lock()
        self._requests = []
        self._transcripts = deque()
        self._faults = {"transcriptions": deque(), "speech": deque()}

    # ---- the test's side (thread-safe) ----
    def script_transcript(self, *texts):
        with self._lock:
            self._transcripts.extend(texts)

    def fail_next(self, endpoint, status=500, message="The server had an error while processing your request."):
        with self._lock:
            self._faults[endpoint].append(("fail", status, message))

    def stall_next(self, endpoint, seconds):
        with self._lock:
            self._faults[endpoint].append(("stall", seconds))

    def cut_next(self, endpoint):
        """The next answer starts, then the connection drops."""
        with self._lock:
            self._faults[endpoint].append(("cut",))

    @property
    def requests(self):
        with self._lock:
            return [dict(r) for r in self._requests]

    def wait_requests(self, count, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.requests) >= count:
                return self.requests
            time.sleep(0.02)
        raise AssertionError("expected {} speech requests, got {}".format(count, len(self.requests)))

    def reset(self):
        with self._lock:
            self._requests.clear()
            self._transcripts.clear()
            for faults in self._faults.values():
                faults.clear()

    # ---- the server ----
    async def _handle(self, request):
        path = request.path.rstrip("/")
        endpoint = path.rsplit("/", 1)[-1]
        record = {"path": path, "endpoint": endpoint, "status": None, "time": time.time(),
                  "content_length": request.content_length,
                  "chunked": "chunked" in request.headers.get("Transfer-Encoding", "").lower()}
        with self._lock:
            self._requests.append(record)
        response = await self._answer(request, record, endpoint)
        record["status"] = response.status if response is not None else None
        return response

    async def _answer(self, request, record, endpoint):
        if request.method != "POST" or not request.path.startswith("/v1/audio/") or endpoint not in self._faults:
            return _error(404, "Invalid URL ({} {})".format(request.method, request.path))
        if request.headers.get("Authorization") != "Bearer " + self.api_key:
            shown = request.headers.get("Authorization", "")[7:]
            return _error(401, "Incorrect API key provided: {}. You can find your API key at "
                               "https://platform.openai.com/account/api-keys.".format(
                                   shown[:3] + "*" * 8 + shown[-4:] if len(shown) > 8 else "****"),
                          "invalid_api_key")
        with self._lock:
            fault = self._faults[endpoint].popleft() if self._faults[endpoint] else None
        if fault and fault[0] == "fail":
            await request.read()
            return _error(fault[1], fault[2], "server_error" if fault[1] >= 500 else None)
        if fault and fault[0] == "stall":
            await asyncio.sleep(fault[1])
        if endpoint == "transcriptions":
            return await self._transcribe(request, record, fault)
        return await self._speak(request, record, fault)

    async def _transcribe(self, request, record, fault):
        if not request.content_type.startswith("multipart/form-data"):
            return _error(400, "Invalid Content-Type header ({}), expected multipart/form-data".format(
                request.content_type))
        if record["content_length"] is None:
            return _error(411, "Length Required")
        if record["content_length"] > FILE_MAX + 65536:
            return _error(413, "Maximum content size limit ({}) exceeded ({} bytes read)".format(
                FILE_MAX, record["content_length"]))
        fields, upload = {}, None
        reader = await request.multipart()
        async for part in reader:
            if part.filename is not None:
                upload = {"field": part.name, "filename": part.filename,
                          "content_type": part.headers.get("Content-Type"), "data": await part.read()}
            else:
                fields[part.name] = await part.text()
        record.update(fields=fields, upload=upload and {k: upload[k] for k in ("field", "filename", "content_type")},
                      data=upload and upload["data"])
        if upload is None or upload["field"] != "file":
            return _error(400, "1 validation error for Request\nbody -> file\n  field required "
                               "(type=value_error.missing)", param="file")
        if not fields.get("model"):
            return _error(400, "you must provide a model parameter", param="model")
        if fields["model"] not in STT_MODELS:
            return _error(404, "The model `{}` does not exist or you do not have access to it.".format(fields["model"]),
                          "model_not_found")
        ext = upload["filename"].rsplit(".", 1)[-1].lower() if "." in upload["filename"] else ""
        if ext not in FORMATS or not upload["content_type"] or not upload["data"]:
            return _error(400, "Invalid file format. Supported formats: {}".format(list(FORMATS)))
        if ext in ("ogg", "oga") and not upload["data"].startswith(b"OggS"):
            return _error(400, "Audio file might be corrupted or unsupported", "invalid_value", "file")
        with self._lock:
            text = self._transcripts.popleft() if self._transcripts else "I said {} bytes of words.".format(
                len(upload["data"]))
        body = json.dumps({"text": text}).encode()
        if fault and fault[0] == "cut":
            return await _cut(request, body, "application/json")
        return web.Response(body=body, content_type="application/json")

    async def _speak(self, request, record, fault):
        try:
            body = json.loads(await request.read())
        except ValueError:
            return _error(400, "We could not parse the JSON body of your request.")
        record["body"] = body
        for name in ("model", "input", "voice"):
            if not isinstance(body.get(name), str) or not body[name]:
                return _error(400, "you must provide a {} parameter".format(name), param=name)
        if body["model"] not in TTS_MODELS:
            return _error(404, "The model `{}` does not exist or you do not have access to it.".format(body["model"]),
                          "model_not_found")
        if body["voice"] not in VOICES:
            return _error(400, "Invalid value for 'voice' = {}.".format(body["voice"]), "invalid_value", "voice")
        if len(body["input"]) > INPUT_MAX:
            return _error(400, "[{'type': 'string_too_long', 'loc': ('body', 'input'), 'msg': 'String should have at "
                               "most 4096 characters'}]", "string_too_long", "input")
        if body.get("response_format", "mp3") not in SPEECH_FORMATS:
            return _error(400, "Invalid value for 'response_format'.", "invalid_value", "response_format")
        if body.get("response_format") != "opus":  # the board asks for Ogg/Opus; other formats are not modelled
            return _error(400, "the fake speaks opus only")
        audio = ogg_opus(max(1, len(body["input"]) / CHARS_PER_SECOND))
        record["audio_bytes"] = len(audio)
        if fault and fault[0] == "cut":
            return await _cut(request, audio, "audio/ogg")
        response = web.StreamResponse(headers={"Content-Type": "audio/ogg"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for at in range(0, len(audio), 4096):
            await response.write(audio[at:at + 4096])
        await response.write_eof()
        return response


async def _cut(request, body, content_type):
    response = web.StreamResponse(headers={"Content-Type": content_type})
    response.content_length = len(body)
    await response.prepare(request)
    await response.write(body[:len(body) // 2])
    await drop_connection(request)
    return response


def main(argv=None):
    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible speech API (offline demo).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8084)
    parser.add_argument("--key", default="sk-speech-test-key-0123456789SECRET")
    args = parser.parse_args(argv)
    FakeSpeech(args.key, host=args.host, port=args.port).serve_forever("fake speech API")


if __name__ == "__main__":
    main()
