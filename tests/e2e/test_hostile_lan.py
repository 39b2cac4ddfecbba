# The gateway and /mcp probed as an attacker on the same network would: a client without the token, a page of
# another site, a name that points at the board (DNS rebinding), fragments and headers without end, rotating MCP
# client names, slow uploads. Each test is one defect the board once had; under both runtimes.
import asyncio
import hashlib
import json
import os
import socket
import struct
import time

from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from host_sim.fake_anthropic import text, tool_use
from tests.e2e.gateway_client import frame, hello, say, until_reply

FOREIGN = "rebind.attacker.example"
WAIT_S = 10


def caller_of(token, address="127-0-0-1"):
    """The key the board gives an MCP client: its address and the first 6 hex digits of its token's SHA-256."""
    return "{}_{}".format(address, hashlib.sha256(token.encode()).hexdigest()[:6])


def _raw(port, payload, source="127.0.0.1", wait=WAIT_S):
    """Everything the gateway answers to raw bytes, until it closes or is quiet for `wait` s."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait, source_address=(source, 0)) as sock:
        try:
            sock.sendall(payload)
        except OSError:  # it closed while we were still sending: what it said is still there to read
            pass
        answer = b""
        try:
            while True:
                data = sock.recv(4096)
                if not data:
                    break
                answer += data
        except (socket.timeout, ConnectionResetError):
            pass
    return answer


def _status(answer):
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else None


def _json_body(answer):
    return json.loads(answer.split(b"\r\n\r\n", 1)[1])


def _request(method, path, headers, body=b""):
    head = "{} {} HTTP/1.1\r\n".format(method, path) + "".join("{}: {}\r\n".format(k, v) for k, v in headers)
    return head.encode() + b"\r\n" + body


def _ws_status(url, **kwargs):
    async def attempt():
        try:
            async with connect(url, open_timeout=10, **kwargs) as ws:
                return json.loads(await asyncio.wait_for(ws.recv(), WAIT_S))
        except InvalidStatus as exc:
            return exc.response.status_code

    return asyncio.run(attempt())


def _mcp(gw, source, name, call, token=None):
    """One stateless MCP request (2026-07-28) from `source` with clientInfo `name`: (status, JSON body)."""
    params = dict(call[1], _meta={"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                  "io.modelcontextprotocol/clientCapabilities": {},
                                  "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"}})
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": call[0], "params": params}).encode()
    headers = [("Host", "127.0.0.1:{}".format(gw.port)), ("Authorization", "Bearer " + (token or gw.token)),
               ("Content-Type", "application/json"), ("Accept", "application/json"),
               ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", call[0]), ("Content-Length", len(body)),
               ("Connection", "close")]
    if "name" in call[1]:
        headers.append(("Mcp-Name", call[1]["name"]))
    answer = _raw(gw.port, _request("POST", "/mcp", headers, body), source=source, wait=60)
    return _status(answer), _json_body(answer)


def _ask(text_):
    return "tools/call", {"name": "ask", "arguments": {"text": text_}}


# -- 1. token off: a client without the token was the owner, and any web page could drive the board --
def test_with_the_token_off_a_client_is_an_observer_in_chats_of_its_own_and_a_foreign_page_is_refused(
        gateway, fake, flash):
    dev = gateway.device
    memory = (flash / "data" / "memory" / "MEMORY.md").read_text()
    fake.script(text("Noted, owner."))

    async def owner_chat():
        async with connect(gateway.url()) as ws:
            await hello(ws)
            await ws.send(say("the safe's code is 4711", "web_owner1"))
            return await until_reply(ws)

    asyncio.run(owner_chat())
    off = dev.command("set_ws_token off")
    origin = "http://127.0.0.1:{}".format(gateway.port)
    assert _ws_status(gateway.url(token=""), origin="http://evil.example") == 403  # another site's page
    assert _ws_status(gateway.url(token=""), origin="null") == 403
    assert "as observer" in off
    fake.script(tool_use("remember", {"text": "the attacker was here"}), text("I may not remember that."))

    async def open_client():
        async with connect(gateway.url(token=""), origin=origin) as ws:  # the board's own page, no token
            first = json.loads(await asyncio.wait_for(ws.recv(), WAIT_S))
            await ws.send(json.dumps({"type": "history", "chat_id": "web_owner1"}))
            history = await frame(ws)
            await ws.send(json.dumps({"type": "settings"}))
            settings = await frame(ws)
            await ws.send(json.dumps({"type": "set", "name": "gw_config.ws_token", "value": "attacker-token"}))
            changed = await frame(ws)
            await ws.send(say("remember that the attacker was here", "web_owner1"))
            return first, history, settings, changed, await until_reply(ws)

    first, history, settings, changed, reply = asyncio.run(open_client())
    assert first["type"] == "hello" and first["role"] == "observer"
    assert history == {"type": "history", "chat_id": "web_owner1", "messages": [], "more": False}  # not the owner's
    assert settings["type"] == "error" and "owner's" in settings["error"]
    assert changed["type"] == "error" and dev.command("config_show").count("gw_config.ws_token = off") == 1
    assert "off" in dev.command("ws_token")  # unchanged
    assert reply[-1] == {"type": "response", "content": "I may not remember that.", "chat_id": "web_owner1"}
    result = json.dumps(fake.requests[-1]["body"]["messages"][-1])
    assert "remember" in result and "owner" in result  # the model was told the tool is the owner's
    assert (flash / "data" / "memory" / "MEMORY.md").read_text() == memory
    sessions = flash / "data" / "sessions"
    assert "4711" in (sessions / "websocket_web_owner1.jsonl").read_text()
    assert "attacker" not in (sessions / "websocket_web_owner1.jsonl").read_text()  # its chat is kept apart
    assert "attacker" in (sessions / "websocket_observer%2Eweb_owner1.jsonl").read_text()


# -- 2. config_set (and the page's set frame) skipped the tokens' rule --
def test_every_path_that_writes_a_token_runs_the_tokens_rule(gateway, fake):
    dev = gateway.device
    for line in ("config_set gw_config.ws_token a", "config_set mcp_config.token ab",
                 "config_set gw_config.ws_token has space&more", "set_ws_token a", "set_mcp_token ab&cdefgh"):
        out = dev.command(line)
        assert "error" in out and "8 to 128" in out, (line, out)
    assert "error" in dev.command("config_set gw_config.ws_token " + "x" * 129)

    async def page_sets(value):
        async with connect(gateway.url()) as ws:
            await hello(ws)
            await ws.send(json.dumps({"type": "set", "name": "mcp_config.token", "value": value}))
            return await frame(ws)

    answer = asyncio.run(page_sets("ab"))
    assert answer["ok"] is False and "8 to 128" in answer["text"] and " ab" not in answer["text"]
    assert _ws_status(gateway.url())["type"] == "hello"  # the token is the one made at first boot
    assert _mcp(gateway, "127.0.0.1", "c", ("ping", {}), token="ab")[0] == 401  # "ab" opens nothing
    assert "mcp_config.token = (not set)" in dev.command("config_show")


# -- 3. empty continuation frames went past the message limit until the heap ran out --
def _masked(opcode, payload=b"", fin=True):
    mask = os.urandom(4)
    head = bytes(((0x80 if fin else 0) | opcode, 0x80 | len(payload)))
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def _upgrade(port, token):
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
    sock.sendall(_request("GET", "/ws?token=" + token, [
        ("Host", "127.0.0.1:{}".format(port)), ("Upgrade", "websocket"), ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13")]))
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def _close_code(sock):
    """The code of the close frame the server sends (frames before it are skipped)."""
    data = b""
    while True:
        while len(data) < 2 or len(data) < 2 + (data[1] & 0x7F):
            more = sock.recv(4096)
            if not more:
                return None
            data += more
        size = data[1] & 0x7F
        if data[0] & 0x0F == 8:
            return struct.unpack(">H", data[2:4])[0]
        data = data[2 + size:]


def test_a_message_of_endless_empty_fragments_is_closed_with_1009_and_costs_nothing(gateway, fake):
    sock = _upgrade(gateway.port, gateway.token)
    try:
        sock.sendall(_masked(1, b"{", fin=False) + _masked(0, fin=False) * 200)
        assert _close_code(sock) == 1009
    finally:
        sock.close()
    gateway.device.expect(r"gateway: \S+ disconnected")
    fake.script(text("Still fine."))

    async def chat():  # a fragmented message within the limits is still one message
        async with connect(gateway.url()) as ws:
            await hello(ws)
            await ws.send([part for part in ('{"type": "message", ', '"content": "hi"}')])
            return await until_reply(ws)

    assert asyncio.run(chat())[-1]["content"] == "Still fine."


# -- 4. a page of the attacker's name, pointed at the board (DNS rebinding), passed the Origin check --
def test_a_name_that_is_not_the_board_s_is_refused_whatever_its_origin(gateway):
    dev = gateway.device
    foreign = "{}:{}".format(FOREIGN, gateway.port)
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    rebound = _raw(gateway.port, _request("POST", "/mcp", [
        ("Host", foreign), ("Origin", "http://" + foreign), ("Authorization", "Bearer " + gateway.token),
        ("Content-Type", "application/json"), ("MCP-Protocol-Version", "2025-06-18"),
        ("Content-Length", len(body))], body))
    assert _status(rebound) == 421, rebound
    upgrade = _raw(gateway.port, _request("GET", "/ws?token=" + gateway.token, [
        ("Host", foreign), ("Origin", "http://" + foreign), ("Upgrade", "websocket"), ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13")]))
    assert _status(upgrade) == 421, upgrade
    assert _status(_raw(gateway.port, _request("GET", "/", [("Host", foreign)]))) == 421
    for name in ("127.0.0.1:{}".format(gateway.port), "localhost:{}".format(gateway.port), "mimiclaw.local",
                 "[::1]:8080", "192.168.1.42"):
        assert _status(_raw(gateway.port, _request("GET", "/", [("Host", name), ("Connection", "close")]))) in (
            200, 404), name
    assert _status(_raw(gateway.port, _request("GET", "/", [("Host", "mimi.home.arpa")]))) == 421
    assert "saved" in dev.command("config_set gw_config.hosts mimi.home.arpa")
    assert _status(_raw(gateway.port, _request("GET", "/", [("Host", "mimi.home.arpa"), ("Connection", "close")]))) \
        in (200, 404)


# -- 5. MCP's rate limit and conversations were keyed on clientInfo.name, which the client chooses --
def test_mcp_limits_and_conversations_follow_the_credential_and_address_not_the_name(gateway, fake, flash):
    dev = gateway.device
    assert "saved" in dev.command("config_set safety_config.user_per_min 2")
    fake.script(*[text("Answer {}.".format(n)) for n in range(12)])
    answers = [_mcp(gateway, "127.0.0.1", "client-{}".format(n), _ask("question {}".format(n)))[1]["result"]
               for n in range(3)]
    assert [a["isError"] for a in answers] == [False, False, True]  # a new name is not a new limit
    assert "at most 2 a minute" in answers[2]["content"][0]["text"]
    sessions = flash / "data" / "sessions"
    assert sorted(p.name for p in sessions.glob("mcp_*.jsonl")) == ["mcp_{}.jsonl".format(caller_of(gateway.token))]
    assert "saved" in dev.command("config_set safety_config.user_per_min 100")
    for n in range(2, 12):  # ten more callers, each from an address of its own
        status, body = _mcp(gateway, "127.0.0.{}".format(n), "name-{}".format(n), _ask("hello {}".format(n)))
        assert status == 200 and not body["result"]["isError"], body
    kept = sorted(p.name for p in sessions.glob("mcp_*.jsonl"))
    assert len(kept) == 8, kept  # at most 8 MCP conversations on flash: the quietest went first
    assert "mcp_127-0-0-11_" in " ".join(kept) and "removed the conversation" in dev.output


# -- 6. 1,500 headers held ~342 KB before anyone was authenticated --
def test_request_headers_past_48_lines_or_8_kb_get_431_before_authentication(gateway):
    many = [("X-H{}".format(n), "v") for n in range(1500)]
    big = [("X-Big{}".format(n), "b" * 1000) for n in range(10)]
    for headers in (many, big, many[:49]):
        answer = _raw(gateway.port, _request("GET", "/ws", [("Host", "127.0.0.1")] + headers))
        assert _status(answer) == 431, answer[:80]
    gateway.device.expect(r"gateway: answered 431 to a request of over 48 header lines or 8192 bytes")
    fine = [("X-H{}".format(n), "v" * 100) for n in range(40)]  # a browser's worth: served
    answer = _raw(gateway.port, _request("GET", "/ws", [("Host", "127.0.0.1"), ("Connection", "close")] + fine))
    assert _status(answer) == 401  # past the head: the token is checked as before
    assert _ws_status(gateway.url())["type"] == "hello"


def _upload_key(sock):
    """The upload key in the hello frame of a connection _upgrade made (an upload is its connection's)."""
    data = b""
    while len(data) < 4:
        data += sock.recv(4096)
    size, at = data[1] & 0x7F, 2
    if size == 126:
        size, at = struct.unpack(">H", data[2:4])[0], 4
    while len(data) < at + size:
        data += sock.recv(4096)
    return json.loads(data[at:at + size])["upload_key"]


# -- 8. ten slow uploads stayed open with ten inbox files --
def test_uploads_are_at_most_two_per_client_and_four_in_all(gateway, flash):
    chat = _upgrade(gateway.port, gateway.token)  # the page's connection: its uploads carry its key
    key = _upload_key(chat)
    slow = [chat]

    def start(source):
        sock = socket.create_connection(("127.0.0.1", gateway.port), timeout=WAIT_S, source_address=(source, 0))
        sock.sendall(_request("POST", "/upload?token={}&key={}&name=slow.txt".format(gateway.token, key), [
            ("Host", "127.0.0.1"), ("Content-Type", "text/plain"), ("Content-Length", 100000)], b"x" * 100))
        slow.append(sock)

    def refused(source):
        answer = _raw(gateway.port, _request("POST", "/upload?token={}&key={}&name=late.txt".format(gateway.token, key), [
            ("Host", "127.0.0.1"), ("Content-Type", "text/plain"), ("Content-Length", 100000)]), source=source)
        return _status(answer), answer

    inbox = flash / "data" / "files" / "inbox"

    # An upload the board took has its file in the inbox: waited for, not slept on, for each upload here is silent
    # after its first bytes and the board drops it after 10 s of silence (uploads.READ_TIMEOUT_S).
    def streaming(count):
        deadline = time.monotonic() + WAIT_S / 2
        while len(list(inbox.glob("ws_up_*"))) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return len(list(inbox.glob("ws_up_*")))

    try:
        start("127.0.0.1")
        start("127.0.0.1")
        assert streaming(2) == 2  # both streaming in
        status, answer = refused("127.0.0.1")
        assert status == 503 and b"at most 2 from one client" in answer
        start("127.0.0.2")
        start("127.0.0.2")
        assert streaming(4) == 4
        assert refused("127.0.0.3")[0] == 503  # four in all
        assert len(list(inbox.glob("ws_up_*"))) == 4
    finally:
        for sock in slow:
            sock.close()
    gateway.device.expect(r"refused an upload")
    for _ in range(50):  # the broken uploads are let go and their files removed
        if not list((flash / "data" / "files" / "inbox").glob("ws_up_*")):
            break
        time.sleep(0.2)
    assert not list((flash / "data" / "files" / "inbox").glob("ws_up_*"))
    chat = _upgrade(gateway.port, gateway.token)
    with chat:
        answer = _raw(gateway.port, _request("POST", "/upload?token={}&key={}&name=note.txt".format(
            gateway.token, _upload_key(chat)), [
            ("Host", "127.0.0.1"), ("Content-Type", "text/plain"), ("Content-Length", 5)], b"hello"))
    assert _status(answer) == 200, answer


# -- issue 41, 4. a body was read (and held) before its route and token were checked: ten POSTs held 177 KB --
def test_a_request_is_refused_on_its_head_before_a_byte_of_its_body_is_read(gateway):
    board, foreign = "127.0.0.1:{}".format(gateway.port), "{}:{}".format(FOREIGN, gateway.port)
    refusals = (("/upload?name=a.txt", [("Host", board)], 401),  # no token
                ("/mcp", [("Host", board), ("Content-Type", "application/json")], 401),
                ("/mcp", [("Host", board), ("Authorization", "Bearer " + gateway.token), ("Origin", "http://evil.example")],
                 403),
                ("/upload?name=a.txt&token=" + gateway.token, [("Host", foreign)], 421),
                ("/", [("Host", board)], 413))  # a route that takes no body: refused unread
    for path, headers, status in refusals:
        with socket.create_connection(("127.0.0.1", gateway.port), timeout=5) as sock:
            sock.sendall(_request("POST", path, headers + [("Content-Length", 16384)]))  # the head alone
            answer = sock.recv(4096)  # it comes before a byte of the body is sent
            assert _status(answer) == status, (path, answer)
            sock.sendall(b"x" * 4096)  # a client that sends its body anyway is heard out briefly, then closed
            started = time.monotonic()
            try:
                while sock.recv(4096):
                    pass
            except ConnectionResetError:
                pass
            assert time.monotonic() - started < 4, path
    assert _status(_raw(gateway.port, _request("POST", "/upload?name=a.txt", [  # the page's answer: JSON
        ("Host", board), ("Content-Length", 5)], b"hello"))) == 401


# -- issue 41, 5. upload ids counted up, and any client's attach frame sent anyone's upload to the model --
def test_an_upload_is_its_own_connection_s_and_another_s_id_is_no_such_upload(gateway, fake, flash):
    dev = gateway.device
    dev.command("set_ws_token off")  # several machines on the network, no token: the hardest case
    origin = "http://127.0.0.1:{}".format(gateway.port)
    fake.script(text("It is a tax return."))

    def upload(key, body, source="127.0.0.1"):
        query = "name=tax.txt" + ("&key=" + key if key else "")
        answer = _raw(gateway.port, _request("POST", "/upload?" + query, [
            ("Host", "127.0.0.1"), ("Content-Type", "text/plain"), ("Content-Length", len(body))], body),
            source=source)
        return _status(answer), _json_body(answer)

    async def main():
        async with connect(gateway.url(token=""), origin=origin) as victim, \
                connect(gateway.url(token=""), origin=origin, local_addr=("127.0.0.2", 0)) as other:
            key = (await frame(victim)).get("upload_key")
            await frame(other)
            first = upload(key, b"the victim's tax return")
            second = upload(key, b"page two")
            unkeyed = upload(None, b"nobody's", source="127.0.0.2")
            await other.send(json.dumps({"type": "attach", "attachment": first[1].get("id"), "content": "mine?"}))
            stolen = await frame(other)
            await victim.send(json.dumps({"type": "attach", "attachment": first[1].get("id"), "content": "what?"}))
            return first, second, unkeyed, stolen, await until_reply(victim)

    first, second, unkeyed, stolen, reply = asyncio.run(main())
    assert first[0] == 200 and second[0] == 200
    assert stolen["type"] == "error" and "no such upload" in stolen["error"].lower(), stolen
    ids = first[1]["id"], second[1]["id"]
    assert all(len(i) == 19 and i.startswith("up_") and int(i[3:], 16) >= 0 for i in ids), ids  # 64 random bits
    assert int(ids[1][3:], 16) - int(ids[0][3:], 16) != 1
    assert unkeyed[0] == 403 and "key" in unkeyed[1]["error"]
    assert reply[-1]["content"] == "It is a tax return."
    (request,) = fake.wait_requests(1)  # the model saw the victim's file once: from the victim
    assert "the victim's tax return" in json.dumps(request["body"]["messages"][-1])


# -- issue 41, 7. a Host of "[evil]" passed the name check, and of two Host headers the last won --
def test_a_host_is_one_name_or_a_real_address(gateway):
    board = "127.0.0.1:{}".format(gateway.port)
    for name in ("[evil]", "[::1", "[1::2::3]", "[12345::1]", "[1:2:3:4:5:6:7:8:9]", "[::1.2.3]", "[]"):
        answer = _raw(gateway.port, _request("GET", "/", [("Host", name)]))
        assert _status(answer) == 421, (name, answer[:80])
    for name in ("[::1]:8080", "[fe80::1]", "[::ffff:192.168.1.5]", "[2001:DB8:0:0:8:800:200C:417A]:18789"):
        answer = _raw(gateway.port, _request("GET", "/", [("Host", name), ("Connection", "close")]))
        assert _status(answer) in (200, 404), (name, answer[:80])
    for hosts in ((board, FOREIGN), (FOREIGN, board), (board, board)):
        with socket.create_connection(("127.0.0.1", gateway.port), timeout=5) as sock:
            sock.sendall(_request("POST", "/upload?name=a.txt&token=" + gateway.token, [
                ("Host", hosts[0]), ("Host", hosts[1]), ("Content-Length", 16384)]))
            answer = sock.recv(4096)  # before the body
        assert _status(answer) == 400 and b"two Host headers" in answer, (hosts, answer)
    gateway.device.expect(r"gateway: answered 400 to a malformed request \(two Host headers")
