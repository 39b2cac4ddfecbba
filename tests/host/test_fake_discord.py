# The fake Discord answers like the real one (gateway v10 and REST v10), checked by raw clients and discord.py.
import asyncio
import json
import ssl
import zlib

import aiohttp
import pytest

from host_sim.fake_discord import DEFAULT_TOKEN, FakeDiscord
from host_sim.telegram_files import png_bytes
from tests.certs import make_test_ca, server_context

TOKEN = DEFAULT_TOKEN
PROPS = {"os": "esp32", "browser": "board", "device": "board"}
GUILDS, GUILD_MESSAGES, DIRECT_MESSAGES, MESSAGE_CONTENT = 1 << 0, 1 << 9, 1 << 12, 1 << 15
AUTH = {"Authorization": "Bot " + TOKEN}
WAIT = 10.0  # generous: nothing here should take more than a fraction of it


@pytest.fixture
def fake():
    with FakeDiscord(heartbeat_interval_ms=500, heartbeat_timeout=False) as server:
        yield server


def run(coro, timeout=60):
    async def bounded():
        return await asyncio.wait_for(coro, timeout)
    return asyncio.run(bounded())


async def rest(fake, method, path, body=None, headers=AUTH, ssl_context=None, **kwargs):
    """(status, headers, JSON or None) of one REST call under /api/v10."""
    async with aiohttp.ClientSession() as session:
        async with session.request(method, fake.api_base + path, json=body, headers=headers, ssl=ssl_context or True,
                                   **kwargs) as response:
            data = await response.read()
            return response.status, response.headers, json.loads(data) if data else None


class Gateway:
    """A raw gateway client: payloads as dicts, zlib-stream undone, op 11 kept apart."""

    def __init__(self, url, compress=None, ssl_context=None, query="?v=10&encoding=json"):
        self.url = url + "/" + query + ("&compress=" + compress if compress else "")
        self.ssl_context, self.zlib = ssl_context, zlib.decompressobj() if compress else None
        self.frames, self.acks = [], 0
        self.session = self.ws = None

    async def __aenter__(self):
        self.session = aiohttp.ClientSession()
        self.ws = await self.session.ws_connect(self.url, ssl=self.ssl_context or True,
                                                autoclose=False)
        return self

    async def __aexit__(self, *exc):
        if not self.ws.closed:
            await self.ws.close()
        await self.session.close()

    async def recv(self, timeout=WAIT, acks=False):
        """The next payload (heartbeat ACKs counted and skipped unless acks); raises on a close."""
        while True:
            message = await self.ws.receive(timeout)
            if message.type == aiohttp.WSMsgType.BINARY:
                self.frames.append(message.data)
                assert message.data.endswith(b"\x00\x00\xff\xff")
                payload = json.loads(self.zlib.decompress(message.data))
            elif message.type == aiohttp.WSMsgType.TEXT:
                self.frames.append(message.data)
                payload = json.loads(message.data)
            else:
                raise ConnectionError("closed: {} {}".format(message.type, message.data))
            if payload["op"] == 11 and not acks:
                self.acks += 1
                continue
            return payload

    async def send(self, op, d=None):
        await self.ws.send_str(json.dumps({"op": op, "d": d}))

    async def identify(self, intents=DIRECT_MESSAGES, token=TOKEN):
        assert (await self.recv())["op"] == 10
        await self.send(2, {"token": token, "intents": intents, "properties": PROPS})
        ready = await self.recv()
        assert (ready["op"], ready["t"]) == (0, "READY")
        return ready

    async def close_code(self, timeout=WAIT):
        """Wait for the gateway to close the connection; its close code."""
        while True:
            message = await self.ws.receive(timeout)
            if message.type == aiohttp.WSMsgType.CLOSE:
                await self.ws.close()
                return message.data
            if message.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                return None


async def no_payload(gateway, seconds):
    """True when nothing but ACKs arrives for `seconds`."""
    try:
        await gateway.recv(timeout=seconds)
    except asyncio.TimeoutError:
        return True
    return False


# ---- REST ----

def test_rest_auth_gateway_url_and_bot_user(fake):
    async def main():
        for headers in ({}, {"Authorization": "Bot wrong"}, {"Authorization": TOKEN}):
            status, _, body = await rest(fake, "GET", "/users/@me", headers=headers)
            assert (status, body) == (401, {"message": "401: Unauthorized", "code": 0})
        status, headers, body = await rest(fake, "GET", "/gateway/bot")
        assert status == 200 and body["url"] == fake.gateway_url and body["shards"] == 1
        assert body["url"].startswith("ws://127.0.0.1:") and body["session_start_limit"]["max_concurrency"] == 1
        assert headers["Content-Type"] == "application/json"  # exactly: discord.py compares the header
        for name in ("Limit", "Remaining", "Reset", "Reset-After", "Bucket"):
            assert "X-RateLimit-" + name in headers
        assert (await rest(fake, "GET", "/gateway", headers={}))[2] == {"url": fake.gateway_url}
        status, _, me = await rest(fake, "GET", "/users/@me")
        assert status == 200 and me["id"] == fake.bot_id and me["bot"] is True and me["username"]
        assert (await rest(fake, "GET", "/nothing/here"))[:3:2] == (404, {"message": "404: Not Found", "code": 0})
        assert (await rest(fake, "DELETE", "/users/@me"))[0] == 405
    run(main())
    assert [c["status"] for c in fake.calls][:3] == [401, 401, 401]


def test_rest_messages_limits_edits_and_replies():
    fake = FakeDiscord(rate_limits=False, heartbeat_timeout=False)
    fake.start()

    async def main():
        status, _, dm = await rest(fake, "POST", "/users/@me/channels", {"recipient_id": "42"})
        assert status == 200 and dm["type"] == 1 and dm["recipients"][0]["id"] == "42"
        assert (await rest(fake, "POST", "/users/@me/channels", {"recipient_id": 42}))[2]["id"] == dm["id"]
        assert dm["id"] == fake.dm_channel(42) != "42"
        path = "/channels/{}/messages".format(dm["id"])
        status, _, sent = await rest(fake, "POST", path, {"content": "é" * 2000})
        assert status == 200 and sent["author"]["id"] == fake.bot_id and sent["channel_id"] == dm["id"]
        assert sent["edited_timestamp"] is None and sent["type"] == 0 and int(sent["id"]) > int(dm["id"])
        status, _, body = await rest(fake, "POST", path, {"content": "x" * 2001})
        assert status == 400 and body["code"] == 50035 and body["message"] == "Invalid Form Body"
        assert body["errors"]["content"]["_errors"][0]["code"] == "BASE_TYPE_MAX_LENGTH"
        for empty in ({"content": ""}, {"content": "  \n"}, {}):
            assert (await rest(fake, "POST", path, empty))[2]["code"] == 50006
        # JSON without the application/json content type is not read: an empty message to Discord
        status, _, body = await rest(fake, "POST", path, data=b'{"content": "hi"}',
                                     headers=dict(AUTH, **{"Content-Type": "text/plain"}))
        assert (status, body["code"]) == (400, 50006)
        status, _, body = await rest(fake, "POST", path, data=b"{nope",
                                     headers=dict(AUTH, **{"Content-Type": "application/json"}))
        assert (status, body["code"]) == (400, 50109)
        assert (await rest(fake, "POST", "/channels/42/messages", {"content": "hi"}))[2]["code"] == 10003
        status, _, edited = await rest(fake, "PATCH", "{}/{}".format(path, sent["id"]), {"content": "final"})
        assert status == 200 and edited["content"] == "final" and edited["edited_timestamp"]
        assert (await rest(fake, "PATCH", path + "/123", {"content": "x"}))[2]["code"] == 10008
        asked = fake.user_message(42, "question")
        status, _, body = await rest(fake, "PATCH", "{}/{}".format(path, asked), {"content": "x"})
        assert (status, body["code"]) == (403, 50005)
        status, _, reply = await rest(fake, "POST", path, {"content": "answer", "message_reference": {
            "message_id": asked, "fail_if_not_exists": False}})
        assert status == 200 and reply["type"] == 19 and reply["message_reference"]["message_id"] == asked
        assert reply["referenced_message"]["content"] == "question"
        bad = {"content": "x", "message_reference": {"message_id": "1"}}
        assert (await rest(fake, "POST", path, bad))[2]["code"] == 50035
        assert (await rest(fake, "POST", "/channels/{}/typing".format(dm["id"])))[0] == 204
        assert (await rest(fake, "GET", "/channels/" + dm["id"]))[2]["type"] == 1
        form = aiohttp.FormData(quote_fields=False)
        form.add_field("payload_json", json.dumps({"content": "a file", "attachments": [{"id": 0}]}))
        form.add_field("files[0]", b"hello file", filename="note.txt", content_type="text/plain")
        status, _, with_file = await rest(fake, "POST", path, data=form)
        assert status == 200 and with_file["attachments"][0]["filename"] == "note.txt"
        async with aiohttp.ClientSession() as session:
            async with session.get(with_file["attachments"][0]["url"]) as response:
                assert (response.status, await response.read()) == (200, b"hello file")
        return dm["id"], sent["id"]
    try:
        channel, first = run(main())
    finally:
        fake.stop()
    assert [m["content"] for m in fake.sent(channel)] == ["final", "answer", "a file"]
    assert fake.edits(channel) == [{"channel_id": channel, "message_id": first, "content": "final",
                                    "previous": "é" * 2000, "time": fake.edits(channel)[0]["time"]}]
    assert len(fake.typing(channel)) == 1
    assert [m["content"] for m in fake.messages(channel)] == ["final", "question", "answer", "a file"]


def test_rest_429_is_recorded_and_too_early_sends_are_refused(fake):
    async def main():
        path = "/channels/{}/messages".format(fake.dm_channel(7))
        fake.rate_limit_next_send(retry_after=0.6)
        status, headers, body = await rest(fake, "POST", path, {"content": "one"})
        assert status == 429 and body == {"message": "You are being rate limited.", "retry_after": 0.6,
                                          "global": False}
        assert headers["Retry-After"] == "1" and headers["X-RateLimit-Scope"] == "user" and headers["Via"]
        assert (await rest(fake, "GET", "/users/@me"))[0] == 200  # a route limit holds sends only
        status, _, body = await rest(fake, "POST", path, {"content": "too early"})
        assert status == 429 and 0 < body["retry_after"] <= 0.6
        await asyncio.sleep(body["retry_after"])  # honour it, as a client must
        assert (await rest(fake, "POST", path, {"content": "one"}))[0] == 200
        fake.rate_limit_next_send(retry_after=0.3, global_=True)
        status, headers, body = await rest(fake, "POST", path, {"content": "two"})
        assert (status, body["global"], headers["X-RateLimit-Global"]) == (429, True, "true")
        assert (await rest(fake, "GET", "/users/@me"))[0] == 429  # a global limit holds every request
        await asyncio.sleep(0.35)
        assert (await rest(fake, "POST", path, {"content": "two"}))[0] == 200
    run(main())
    first, second = fake.throttles
    assert len(first["too_early"]) == 1 and first["accepted_at"] - first["limited_at"] >= 0.6
    assert second["global"] and len(second["too_early"]) == 1 and second["accepted_at"] >= second["until"]
    assert [r["too_early"] for r in fake.rate_limited] == [False, True, False, True]


def test_rest_route_bucket_runs_out_after_five_sends(fake):
    async def main():
        path = "/channels/{}/messages".format(fake.dm_channel(8))
        remaining = []
        for n in range(5):
            status, headers, _ = await rest(fake, "POST", path, {"content": str(n)})
            remaining.append((status, headers["X-RateLimit-Remaining"]))
        assert remaining == [(200, "4"), (200, "3"), (200, "2"), (200, "1"), (200, "0")]
        status, headers, body = await rest(fake, "POST", path, {"content": "sixth"})
        assert status == 429 and body["global"] is False and float(headers["X-RateLimit-Reset-After"]) > 0
    run(main())
    assert fake.rate_limited[0]["scripted"] is False


def test_attachments_are_served_like_the_cdn(fake):
    picture = png_bytes(3, 2)
    fake.user_message(5, "look", attachments=[("p.png", picture), {"filename": "a b.txt", "data": b"text"}])
    image, text = fake.messages(fake.dm_channel(5))[0]["attachments"]
    assert (image["content_type"], image["width"], image["height"], image["size"]) == ("image/png", 3, 2,
                                                                                       len(picture))
    assert text["content_type"] == "text/plain" and "width" not in text and "hm=" in text["url"]

    async def main():
        async with aiohttp.ClientSession() as session:
            for item, data in ((image, picture), (text, b"text")):
                async with session.get(item["url"]) as response:
                    assert response.status == 200 and await response.read() == data
                    assert response.headers["Content-Type"].startswith(item["content_type"])
            async with session.get(image["url"].split("?")[0]) as response:
                assert response.status == 404  # the signed query is part of the URL
    run(main())
    assert [d["status"] for d in fake.downloads] == [200, 200, 404]


# ---- the gateway ----

def test_hello_heartbeat_identify_ready_and_a_dm(fake):
    async def main():
        async with Gateway(fake.gateway_url) as gw:
            hello = await gw.recv()
            assert hello == {"t": None, "s": None, "op": 10, "d": hello["d"]}
            assert hello["d"]["heartbeat_interval"] == 500
            await gw.send(1, None)
            assert (await gw.recv(acks=True))["op"] == 11
            await gw.send(2, {"token": TOKEN, "intents": DIRECT_MESSAGES, "properties": PROPS})
            ready = await gw.recv()
            assert (ready["t"], ready["s"], ready["d"]["v"], ready["d"]["guilds"]) == ("READY", 1, 10, [])
            assert ready["d"]["user"]["id"] == fake.bot_id and ready["d"]["user"]["bot"] is True
            assert ready["d"]["resume_gateway_url"].startswith(fake.gateway_url)
            assert ready["d"]["application"]["id"] == fake.bot_id
            assert fake.connected
            message_id = fake.user_message(42, "hi there", username="alice")
            created = await gw.recv()
            assert (created["op"], created["t"], created["s"]) == (0, "MESSAGE_CREATE", 2)
            d = created["d"]
            assert (d["id"], d["content"], d["channel_id"], d["type"]) == (message_id, "hi there",
                                                                         fake.dm_channel(42), 0)
            assert "guild_id" not in d and d["author"]["id"] == "42" and d["author"]["username"] == "alice"
            assert d["author"]["discriminator"] == "0" and d["author"]["avatar"] is None
            await gw.send(1, 2)
            assert (await gw.recv(acks=True))["op"] == 11
            # the bot's own message comes back as MESSAGE_CREATE (a board must not answer itself)
            status, _, sent = await rest(fake, "POST", "/channels/{}/messages".format(d["channel_id"]),
                                         {"content": "hello"})
            echoed = await gw.recv()
            assert (echoed["t"], echoed["d"]["id"], echoed["d"]["author"]["id"]) == ("MESSAGE_CREATE", sent["id"],
                                                                                      fake.bot_id)
            await rest(fake, "PATCH", "/channels/{}/messages/{}".format(d["channel_id"], sent["id"]),
                       {"content": "hello!"})
            updated = await gw.recv()
            assert (updated["t"], updated["d"]["content"], updated["s"]) == ("MESSAGE_UPDATE", "hello!", 4)
            return ready["d"]["session_id"]
    session_id = run(main())
    assert fake.identifies[0]["intents"] == DIRECT_MESSAGES and fake.identifies[0]["session_id"] == session_id
    assert [h["d"] for h in fake.heartbeats] == [None, 2]
    assert fake.sessions[0]["events"] == ["READY", "MESSAGE_CREATE", "MESSAGE_CREATE", "MESSAGE_UPDATE"]


def test_zlib_stream_is_one_stream_of_sync_flushed_binary_frames(fake):
    async def main():
        async with Gateway(fake.gateway_url, compress="zlib-stream") as gw:
            await gw.identify()
            fake.user_message(1, "ü" * 50)
            assert (await gw.recv())["d"]["content"] == "ü" * 50
            assert len(gw.frames) == 3 and all(isinstance(f, bytes) for f in gw.frames)
        async with Gateway(fake.gateway_url) as plain:
            await plain.identify()
            assert all(isinstance(f, str) for f in plain.frames)
    run(main())
    assert fake.identifies[0]["compress"] == "zlib-stream"


def test_stop_acks_then_resume_replays_what_was_missed(fake):
    async def main():
        async with Gateway(fake.gateway_url) as gw:
            ready = (await gw.identify())["d"]
            fake.stop_acks()
            await gw.send(1, 1)
            fake.user_message(3, "sent to a zombie")
            assert await no_payload(gw, 0.5) and gw.acks == 0
            await gw.ws.close(code=4000)  # no ACK: the client closes (not 1000, to keep the session) and resumes
        assert fake.wait_for(lambda: not fake.connected, WAIT)
        fake.user_message(3, "sent while away")
        async with Gateway(ready["resume_gateway_url"]) as gw:
            assert (await gw.recv())["op"] == 10
            await gw.send(6, {"token": TOKEN, "session_id": ready["session_id"], "seq": 1})
            replayed = [await gw.recv() for _ in range(3)]
            assert [(p["t"], p["s"]) for p in replayed] == [("MESSAGE_CREATE", 2), ("MESSAGE_CREATE", 3),
                                                           ("RESUMED", 4)]
            assert [p["d"]["content"] for p in replayed[:2]] == ["sent to a zombie", "sent while away"]
            await gw.send(1, 4)
            assert (await gw.recv(acks=True))["op"] == 11  # the new connection ACKs
    run(main())
    resume = fake.resumes[0]
    assert (resume["outcome"], resume["replayed"], resume["seq"], resume["path"]) == ("resumed", 2, 1, "/resume/")
    assert [h["acked"] for h in fake.heartbeats] == [False, True]
    assert fake.closes[0]["by"] == "client" and fake.closes[0]["code"] == 4000


def test_op7_reconnect_and_a_dropped_connection_resume(fake):
    async def main():
        async with Gateway(fake.gateway_url) as gw:
            ready = (await gw.identify())["d"]
            assert fake.send_reconnect() == 1
            assert (await gw.recv())["op"] == 7
            fake.user_message(3, "between connections")
            await gw.ws.close(code=4000)
        async with Gateway(ready["resume_gateway_url"]) as gw:
            assert (await gw.recv())["op"] == 10
            await gw.send(6, {"token": TOKEN, "session_id": ready["session_id"], "seq": 1})
            assert [(await gw.recv())["t"] for _ in range(2)] == ["MESSAGE_CREATE", "RESUMED"]
            assert fake.drop_connection() == 1
            assert await gw.close_code() is None  # no close frame
        fake.user_message(3, "after the drop")
        async with Gateway(ready["resume_gateway_url"]) as gw:
            await gw.recv()
            await gw.send(6, {"token": TOKEN, "session_id": ready["session_id"], "seq": 3})
            events = [await gw.recv() for _ in range(2)]
            assert [(p["t"], p["s"]) for p in events] == [("MESSAGE_CREATE", 4), ("RESUMED", 5)]
    run(main())
    assert [r["outcome"] for r in fake.resumes] == ["resumed", "resumed"]
    assert [c["by"] for c in fake.closes][:2] == ["client", "drop"]


def test_invalid_session_then_a_fresh_identify(fake):
    async def main():
        async with Gateway(fake.gateway_url) as gw:
            first = (await gw.identify())["d"]
            assert fake.invalidate_session(resumable=False) == 1
            assert await gw.recv() == {"t": None, "s": None, "op": 9, "d": False}
            await gw.send(6, {"token": TOKEN, "session_id": first["session_id"], "seq": 1})
            assert (await gw.recv())["d"] is False  # that session is gone
            await gw.send(2, {"token": TOKEN, "intents": DIRECT_MESSAGES, "properties": PROPS})
            second = await gw.recv()
            assert second["t"] == "READY" and second["s"] == 1 and second["d"]["session_id"] != first["session_id"]
            assert fake.invalidate_session(resumable=True) == 1
            assert (await gw.recv())["d"] is True
            await gw.send(6, {"token": TOKEN, "session_id": second["d"]["session_id"], "seq": 1})
            assert (await gw.recv())["t"] == "RESUMED"
            await gw.ws.close(code=1000)  # closing with 1000 ends the session, as on Discord
        async with Gateway(fake.gateway_url) as gw:
            await gw.recv()
            await gw.send(6, {"token": TOKEN, "session_id": second["d"]["session_id"], "seq": 2})
            assert (await gw.recv())["op"] == 9
    run(main())
    assert [r["outcome"] for r in fake.resumes] == ["invalid", "resumed", "invalid"]


@pytest.mark.parametrize("name, sends, code", [
    ("bad token", [(2, {"token": "nope", "intents": DIRECT_MESSAGES, "properties": PROPS})], 4004),
    ("privileged intent", [(2, {"token": TOKEN, "intents": DIRECT_MESSAGES | MESSAGE_CONTENT,
                                "properties": PROPS})], 4014),
    ("intents missing", [(2, {"token": TOKEN, "properties": PROPS})], 4013),
    ("properties missing", [(2, {"token": TOKEN, "intents": 0})], 4002),
    ("not JSON", ["{not json"], 4002),
    ("unknown op", [(5, None)], 4001),
    ("presence before identify", [(3, {"status": "online"})], 4003),
    ("identify twice", [(2, {"token": TOKEN, "intents": 0, "properties": PROPS})] * 2, 4005),
    ("too large", [(1, "x" * 5000)], 4002),
])
def test_gateway_refusals_close_with_discords_codes(fake, name, sends, code):
    async def main():
        async with Gateway(fake.gateway_url) as gw:
            await gw.recv()
            for item in sends:
                if isinstance(item, str):
                    await gw.ws.send_str(item)
                else:
                    await gw.send(*item)
            return await gw.close_code(), gw.ws.close_code
    got, _ = run(main())
    assert got == code, name
    assert fake.closes[-1]["by"] == "fake" and fake.closes[-1]["code"] == code


def test_gateway_without_v10_is_refused(fake):
    async def main():
        async with Gateway(fake.gateway_url, query="?encoding=json") as gw:
            return await gw.close_code()
    assert run(main()) == 4012


def test_intents_decide_what_arrives_and_with_what_content():
    with FakeDiscord(heartbeat_interval_ms=500, heartbeat_timeout=False, message_content=True) as fake:
        guild_id, channel_id = fake.add_guild()

        async def main():
            async with Gateway(fake.gateway_url) as plain, Gateway(fake.gateway_url) as reader, \
                    Gateway(fake.gateway_url) as guilds:
                ready = await plain.identify(GUILD_MESSAGES)
                assert ready["d"]["guilds"] == [{"id": guild_id, "unavailable": True}]
                await reader.identify(GUILD_MESSAGES | MESSAGE_CONTENT)
                await guilds.identify(GUILDS)
                created = await guilds.recv()
                assert created["t"] == "GUILD_CREATE" and created["d"]["id"] == guild_id
                assert [c["id"] for c in created["d"]["channels"]] == [channel_id]
                fake.user_message(9, "a DM nobody asked for")
                fake.user_message(9, "chatter", guild_id=guild_id, attachments=[("a.txt", b"x")])
                fake.user_message(9, "hey bot", guild_id=guild_id, mentions_bot=True)
                hidden, mention = await plain.recv(), await plain.recv()
                assert (hidden["t"], hidden["d"]["guild_id"], hidden["d"]["channel_id"]) == ("MESSAGE_CREATE",
                                                                                           guild_id, channel_id)
                assert (hidden["d"]["content"], hidden["d"]["attachments"], hidden["d"]["embeds"]) == ("", [], [])
                assert mention["d"]["content"] == "<@{}> hey bot".format(fake.bot_id)
                assert mention["d"]["mentions"][0]["id"] == fake.bot_id and "member" in mention["d"]
                full = await reader.recv()
                assert full["d"]["content"] == "chatter" and full["d"]["attachments"][0]["filename"] == "a.txt"
                assert await no_payload(guilds, 0.3)  # GUILDS alone brings no messages
        run(main())
        assert [s["events"] for s in fake.sessions] == [["READY", "MESSAGE_CREATE", "MESSAGE_CREATE"]] * 2 + [
            ["READY", "GUILD_CREATE"]]


def test_a_connection_that_stops_heartbeating_is_closed_4009():
    with FakeDiscord(heartbeat_interval_ms=200) as fake:
        async def main():
            async with Gateway(fake.gateway_url) as gw:
                await gw.identify()
                return await gw.close_code()
        assert run(main()) == 4009
        assert fake.sessions[0]["resumable"] is False


def test_tls_rest_and_wss_with_the_test_ca(tmp_path):
    paths = make_test_ca(tmp_path)
    client = ssl.create_default_context(cafile=paths["ca.pem"])
    with FakeDiscord(ssl_context=server_context(paths), heartbeat_timeout=False) as fake:
        async def main():
            status, _, body = await rest(fake, "GET", "/gateway/bot", ssl_context=client)
            assert status == 200 and body["url"].startswith("wss://")
            async with Gateway(body["url"], ssl_context=client) as gw:
                ready = await gw.identify()
                assert ready["d"]["resume_gateway_url"].startswith("wss://")
        run(main())
        assert fake.url.startswith("https://") and fake.connected is False


# ---- the official client ----

class _ZlibContext:
    """discord.py's own zlib-stream decompressor (its utils picks zstd-stream when zstandard is installed)."""

    COMPRESSION_TYPE = "zlib-stream"

    def __init__(self):
        self.buffer, self.context = bytearray(), zlib.decompressobj()

    def decompress(self, data):
        self.buffer.extend(data)
        if len(data) < 4 or data[-4:] != b"\x00\x00\xff\xff":
            return None
        message, self.buffer = self.context.decompress(self.buffer), bytearray()
        return message.decode("utf-8")


def test_discord_py_connects_receives_a_dm_and_replies(monkeypatch):
    """discord.py 2.7 against the fake. What is patched: http.Route.BASE (the REST base, as protocols.md says)
    and gateway.DiscordWebSocket.DEFAULT_GATEWAY (Client.connect dials it for IDENTIFY; it never asks
    /gateway/bot, only AutoShardedClient does); utils._ActiveDecompressionContext only if zstd-stream is active."""
    discord = pytest.importorskip("discord")
    import yarl
    from discord import gateway, http, utils

    with FakeDiscord(heartbeat_interval_ms=1000) as fake:
        monkeypatch.setattr(http.Route, "BASE", fake.api_base)
        monkeypatch.setattr(gateway.DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(fake.gateway_url + "/"))
        if utils._ActiveDecompressionContext.COMPRESSION_TYPE != "zlib-stream":
            monkeypatch.setattr(utils, "_ActiveDecompressionContext", _ZlibContext)
        seen = []

        async def main():
            intents = discord.Intents.none()
            intents.dm_messages = True
            client = discord.Client(intents=intents, guild_ready_timeout=0.1)
            ready, replied = asyncio.Event(), asyncio.Event()

            @client.event
            async def on_ready():
                ready.set()

            @client.event
            async def on_message(message):
                if message.author.id == client.user.id:
                    return  # its own reply comes back through the gateway too
                seen.append((message.content, message.author.id, message.author.name, type(message.channel)))
                await message.channel.send("pong: " + message.content)
                replied.set()

            runner = asyncio.ensure_future(client.start(TOKEN))
            try:
                await until(ready, runner)
                assert client.user.id == int(fake.bot_id) and client.user.bot
                await asyncio.to_thread(fake.user_message, 42, "ping", username="alice")
                await until(replied, runner)
            finally:
                await client.close()
                await asyncio.wait_for(runner, WAIT)

        run(main())
        channel = fake.dm_channel(42)
        assert seen == [("ping", 42, "alice", discord.DMChannel)]
        assert fake.wait_for(lambda: [m["content"] for m in fake.sent(channel)] == ["pong: ping"], WAIT)
        identify = fake.identifies[0]
        assert identify["intents"] == DIRECT_MESSAGES and identify["compress"] == "zlib-stream"
        assert identify["properties"]["browser"] == "discord.py"
        # client.close() asks for 1000, but its reader (discord.py's poll_event) closes first, with 4000
        assert fake.wait_for(lambda: fake.closes, WAIT)[-1]["by"] == "client" and not fake.connected


async def until(event, runner, timeout=30.0):
    """Wait for event; fail at once with the client's error if client.start() ended first."""
    waiter = asyncio.ensure_future(event.wait())
    done, _ = await asyncio.wait({waiter, runner}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    if waiter not in done:
        waiter.cancel()
        if runner in done:
            runner.result()
        raise AssertionError("timed out waiting for {}".format(event))
