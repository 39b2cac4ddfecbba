# A fake Telegram Bot API (long polling, parse modes, flood control, scripted faults) for tests.
import argparse
import asyncio
import re
import threading
import time

from host_sim.background_server import BackgroundServer
from host_sim.telegram_params import ApiError, Args, FloodControl, recorded
from host_sim.telegram_wire import (
    GATEWAY_ERRORS, cut_response, error_body, gateway_page, gateway_response, json_response,
    read_args, success_body, truncated_response)
from host_sim.telegram_faults import TERMINATED, ScriptedFaults
from host_sim.telegram_media import VoiceUpdates, set_caption
from host_sim.telegram_files import Files
from host_sim.telegram_world import CANONICAL, METHODS, World

_PATH = re.compile(r"^/bot([^/]*)/([^/]*)$")
_KEEP = object()



class FakeTelegram(ScriptedFaults, VoiceUpdates, BackgroundServer):
    """The Bot API on a local port: inject users' updates, read `calls`, script faults (telegram_faults.py)."""

    name = "fake-telegram"

    def __init__(self, token="123456:TEST-token", ssl_context=None, host="127.0.0.1", port=0,
                 drafts="ok", rate_limits=True, update_ttl=24 * 3600):
        super().__init__(ssl_context, host, port)
        self.token = token
        self._lock = threading.Lock()
        self._world = World(token, drafts, update_ttl, FloodControl())
        if not rate_limits:
            self._world.flood.set(None, None, None)
        self._calls = []
        self._faults, self._slow = {}, {}
        self._held = None  # the getUpdates request being held, as a ticket dict
        self.files = Files()  # photos and documents users sent: getFile and the download URL
        self.message_ids = {}  # update_id -> message_id of the voice notes users sent (replies name them)
        self._wakeup = None

    # ---- the users' side: inject updates (thread-safe) ----

    def _inject(self, build, *args, **kwargs):
        with self._lock:
            update_id = build(*args, **kwargs)
        self._wake()
        return update_id

    def user_message(self, user_id, text, chat_id=None, username=None, first_name="A",
                     reply_to=None):
        """A text message from a user (private chat unless chat_id; a group when negative);
        returns its update_id, or None when the bot's allowed_updates means Telegram would not
        produce it. @mentions and a leading /command become entities as Telegram makes them;
        reply_to (a message_id in that chat) adds reply_to_message."""
        return self._inject(self._world.user_message, user_id, text, chat_id, username,
                            first_name, reply_to)

    @property
    def bot_username(self):
        """The bot's @username without the @, as getMe gives it."""
        return self._world.bot["username"]

    def non_text_message(self, user_id, kind="photo", caption=None, chat_id=None):
        """A photo/sticker/voice/audio/video/video_note/animation/document/location/contact."""
        return self._inject(self._world.non_text_message, user_id, kind, caption, chat_id)

    def photo_message(self, user_id, sizes, caption=None, chat_id=None):
        """A photo: [(width, height, bytes)] smallest first, as Telegram offers its sizes; returns the update_id."""
        def build():
            message = self._world._incoming(user_id, chat_id, None, "A")
            message["photo"] = self.files.photo_sizes(sizes)
            if caption is not None:
                set_caption(message, caption)
            return self._world.add_update("message", message)
        return self._inject(build)

    def document_message(self, user_id, data, file_name, mime_type, caption=None, chat_id=None):
        """A file sent as a document; returns the update_id."""
        def build():
            message = self._world._incoming(user_id, chat_id, None, "A")
            ext = file_name.rsplit(".", 1)[-1] if "." in file_name else "bin"
            entry = self.files.add(data, "documents", ext)
            message["document"] = {"file_name": file_name, "mime_type": mime_type, "file_id": entry["file_id"],
                                   "file_unique_id": entry["file_unique_id"], "file_size": len(data)}
            if caption is not None:
                set_caption(message, caption)
            return self._world.add_update("message", message)
        return self._inject(build)

    def cut_download_next(self, after_bytes, times=1):
        """The next downloads send after_bytes of the file, then drop the connection."""
        for _ in range(times):
            self.files.fault_next("cut", after_bytes)

    def missing_download_next(self):
        """The next download answers 404 (the file_path expired)."""
        self.files.fault_next("404")

    @property
    def downloads(self):
        return list(self.files.downloads)

    def callback_query(self, user_id, data, message_id, chat_id=None):
        """A press on an inline button of message_id; returns the update_id."""
        return self._inject(self._world.callback_query, user_id, data, message_id, chat_id)

    def add_update(self, kind, body):
        """Any other update type, body as the API shapes it; returns the update_id."""
        return self._inject(self._world.add_update, kind, body)

    def add_chat(self, chat_id, title=None):
        """Make a chat known without an update from it (groups have negative ids)."""
        with self._lock:
            self._world.add_chat(chat_id, title)

    def set_rate_limits(self, per_chat=_KEEP, per_group=_KEEP, overall=_KEEP):
        """Each limit is (messages per second, burst) or None for off; omitted ones stay.
        Every allowance starts full again."""
        with self._lock:
            flood = self._world.flood
            flood.set(flood.per_chat if per_chat is _KEEP else per_chat,
                      flood.per_group if per_group is _KEEP else per_group,
                      flood.overall if overall is _KEEP else overall)

    # ---- what the bot did (thread-safe copies) ----

    @property
    def calls(self):
        """Every request: {"method", "params", "time", "status", "response"}, oldest first;
        "fault" names a scripted reset/malformed answer, "held" a held one, "client_gone" an answer nobody read."""
        with self._lock:
            return [dict(c) for c in self._calls]

    def sent(self, chat_id):
        """The bot's messages in the chat as they stand now (after edits), oldest first:
        {"message_id", "text" (as sent), "parse_mode", "shown" (as seen), "reply_markup"}."""
        with self._lock:
            chat = self._world.chats.get(chat_id, {"messages": {}})
            return [{"message_id": m["message"]["message_id"], "text": m["raw"],
                     "parse_mode": m["parse_mode"],
                     "shown": m["message"]["text"] if "text" in m["message"] else m["message"].get("caption", ""),
                     "reply_markup": m["message"].get("reply_markup")}
                    for _, m in sorted(chat["messages"].items()) if m["from_bot"]]

    def sent_messages(self, chat_id):
        """The bot's messages in the chat as Message objects (voice notes, captions, reply_to_message), oldest
        first; an uploaded file's bytes under "data"."""
        with self._lock:
            chat = self._world.chats.get(chat_id, {"messages": {}})
            return [dict(m["message"], data=m.get("data")) for _, m in sorted(chat["messages"].items())
                    if m["from_bot"]]

    def drafts(self, chat_id):
        """sendMessageDraft calls: {"draft_id", "text", "shown", "parse_mode", "time"}."""
        with self._lock:
            return [dict(d) for d in self._world.chats.get(chat_id, {"drafts": []})["drafts"]]

    def actions(self, chat_id):
        """sendChatAction actions sent to the chat, oldest first."""
        with self._lock:
            return list(self._world.chats.get(chat_id, {"actions": []})["actions"])

    @property
    def callback_answers(self):
        """answerCallbackQuery calls: {"callback_query_id", "text", "show_alert"}."""
        with self._lock:
            return [dict(a) for a in self._world.callback_answers]

    @property
    def offset_confirmed(self):
        """The highest update_id confirmed by a getUpdates offset (0: none yet)."""
        with self._lock:
            return self._world.offset_confirmed

    @property
    def webhook_url(self):
        with self._lock:
            return self._world.webhook

    # ---- serving ----

    def _application(self):
        from aiohttp import web

        return web.Application(client_max_size=64 * 1024 * 1024)  # uploads up to the API's 50 MB

    async def _opened(self):
        self._wakeup = asyncio.Event()

    async def _closing(self):
        self._ring()  # held polls see _stopping and answer at once

    def _wake(self):
        """Wake held getUpdates requests to look again (from any thread)."""
        loop = self._loop
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(self._ring)

    def _ring(self):
        if self._wakeup is not None:
            self._wakeup.set()
            self._wakeup = asyncio.Event()

    async def _handle(self, request):
        prefix = "/file/bot{}/".format(self.token)
        if request.path.startswith("/file/"):  # a download: <base>/file/bot<token>/<file_path>
            if not request.path.startswith(prefix):
                return json_response(404, {"ok": False, "error_code": 404, "description": "Not Found"})
            return await self.files.serve(request, request.path[len(prefix):])
        match = _PATH.match(request.path)
        record = {"method": match.group(2) if match else None, "params": {},
                  "time": time.time(), "status": None, "response": None}
        with self._lock:
            self._calls.append(record)
        args, typed, bad_body = await read_args(request)
        with self._lock:
            record["params"] = recorded(typed)
        if match is None:
            return self._error(record, ApiError(404, "Not Found"))
        if match.group(1) != self.token:
            return self._error(record, ApiError(401, "Unauthorized"))
        method = CANONICAL.get(match.group(2).lower()) or ("getFile" if match.group(2).lower() == "getfile" else None)
        if method is None:
            return self._error(record, ApiError(404, "Not Found: method not found"))
        with self._lock:
            record["method"] = method
            slow = self._slow.get(method.lower()) and self._slow[method.lower()].popleft()
            faults = self._faults.get(method.lower())
            fault = faults.popleft() if faults else {"kind": None}
        if slow and not await self._sleep(slow):
            return self._error(record, ApiError(500, "Internal Server Error"))
        if fault["kind"] == "fail":
            return self._error(record, fault["error"])
        if fault["kind"] == "reset" and fault["before"]:
            self._finish(record, 200, None, fault="reset")
            return await cut_response(request, None)
        status, body = await self._answer(method, args, bad_body)
        if fault["kind"] == "hold":
            with self._lock:
                record["held"] = True
            await self._sleep(fault["seconds"])
        if fault["kind"] == "reset":
            self._finish(record, 200, None, fault="reset")
            return await cut_response(request, body)
        if fault["kind"] == "malformed":
            response, half = truncated_response(body)
            self._finish(record, 200, half.decode("utf-8", "replace"), fault="malformed")
            return response
        gone = request.transport is None or request.transport.is_closing()
        self._finish(record, status, body, **({"client_gone": True} if gone else {}))
        return json_response(status, body)

    async def _answer(self, method, args, bad_body):
        """(HTTP status, JSON body) of one call."""
        try:
            if bad_body is not None:
                raise bad_body
            if method == "getUpdates":
                return 200, success_body(await self._poll(Args(args)))
            if method == "getFile":
                return 200, success_body(self.files.get_file(Args(args)))
            with self._lock:
                result, description = METHODS[method](self._world, Args(args))
            return 200, success_body(result, description)
        except ApiError as exc:
            return exc.code, error_body(exc)

    async def _poll(self, args):
        """getUpdates: answer at once when updates wait, else hold up to `timeout` seconds."""
        ticket = {"superseded": False}
        with self._lock:
            limit, timeout = self._world.begin_poll(args)
            if self._held is not None:
                self._held["superseded"] = True  # the real server answers the older poll 409
            self._held = ticket
        self._ring()
        deadline = self._loop.time() + timeout
        try:
            while True:
                wakeup = self._wakeup
                with self._lock:
                    if ticket["superseded"]:
                        raise ApiError(409, TERMINATED)
                    updates = self._world.take_updates(limit)
                remaining = deadline - self._loop.time()
                if updates or remaining <= 0 or self._stopping.is_set():
                    return updates
                try:
                    await asyncio.wait_for(wakeup.wait(), remaining)
                except asyncio.TimeoutError:
                    pass
        finally:
            with self._lock:
                if self._held is ticket:
                    self._held = None

    def _finish(self, record, status, response, **extra):
        with self._lock:
            record["status"], record["response"] = status, response
            record.update(extra)

    def _error(self, record, exc):
        if exc.code in GATEWAY_ERRORS:
            self._finish(record, exc.code, gateway_page(exc.code))
            return gateway_response(exc.code)
        body = error_body(exc)
        self._finish(record, exc.code, body)
        return json_response(exc.code, body)



def main(argv=None):
    from host_sim import chaos  # seeded random faults (--chaos-seed)

    parser = argparse.ArgumentParser(description="Fake Telegram Bot API (offline demo).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081)
    parser.add_argument("--token", default="123456:TEST-token")
    parser.add_argument("--drafts", default="ok", choices=("ok", "not_found", "bad_request"))
    chaos.add_arguments(parser)
    args = parser.parse_args(argv)
    fake = FakeTelegram(token=args.token, host=args.host, port=args.port, drafts=args.drafts)
    chaos.from_arguments(args, telegram=fake)
    fake.serve_forever("fake Telegram Bot API")


if __name__ == "__main__":
    main()
