# agent/consolidate.py: a long session summarised once into the daily note, shrunk, crash-safe at each step.
from support import read, remove_tree, run, tempdir

import sys

from mimi import heap, jsontext, platform
from mimi.agent import consolidate
from mimi.bus.message import Message
from mimi.settings import Config
from mimi.storage import files
from mimi.storage.layout import Flash
from mimi.storage.memory import Memory
from mimi.storage.sessions import Sessions

SUMMARY = "The user planned a trip to Porto with Ada and asked about trains."


class PowerCut(Exception):
    pass


class Result:
    def __init__(self, text):
        self.text = text
        self.usage = {"input_tokens": 100, "output_tokens": 20}
        self.model = "claude-haiku-4-5"
        self.stop_reason = "end_turn"


class FakeClaude:
    def __init__(self, reply="SUMMARY: " + SUMMARY + "\nFACT: The owner's sister is called Ada."):
        self.reply = reply
        self.calls = []
        self.fail = False

    async def stream(self, system, messages, *, tools=None, on_delta=None, tool_choice=None, model=None,
                     max_tokens=None, route=None):
        content = messages[0]["content"]  # read from the session file as the request is written: read now
        self.calls.append({"system": system, "messages": messages, "tools": tools, "model": model,
                           "max_tokens": max_tokens, "job": route.job if route else None,
                           "sent": content.text() if hasattr(content, "text") else content,
                           "loaded": [name for name in _LOADED if name in sys.modules]})
        if self.fail:
            from mimi.llm.errors import ModelError

            raise ModelError("cut", "The connection to Claude broke")
        return Result(self.reply)


class FakeAgent:
    def __init__(self, claude, refusal=None):
        self.models = claude  # the agent's models (llm/models.py): this fake answers for every profile
        self.refusal = refusal
        self.used = []

    def check_call(self, message, job=None):
        return self.refusal

    def spent(self, message, result):
        self.used.append(result.usage)


class Holder:
    pass


def _app(tag="cons"):
    app = Holder()
    app.top = tempdir(tag)
    app.flash = Flash(app.top + "/data")
    app.flash.seed()
    app.config = Config()
    app.config.override("tg_config", "allowlist", "42,7")  # telegram_42: the owner's private chat, 7: an observer's
    app.config.override("tg_config", "roles", "42=owner,7=observer")
    app.memory = Memory(app.flash)
    app.sessions = Sessions(app.flash.sessions_dir)
    app.registry = None
    return app


def _fill(app, pairs, chat="42"):
    for i in range(pairs):
        app.sessions.append("telegram", chat, "user", "question {}".format(i), 1000 + i)
        app.sessions.append("telegram", chat, "assistant", "answer {}".format(i), 1000 + i)


def _contents(app, chat="42"):
    return [m["content"] for m in app.sessions.history("telegram", chat, 1000)]


def _consolidate(app, agent, force=False):
    message = Message("telegram", "42", "hi", {"role": "owner"})
    return run(consolidate.of(app).run(agent, message, "telegram", "42", force, "owner"))


def test_a_long_session_is_summarised_once_into_the_daily_note_and_shrinks():
    app = _app()
    try:
        _fill(app, 12)  # 24 messages, over the cap of 20
        claude = FakeClaude()
        agent = FakeAgent(claude)
        assert consolidate.of(app).due("telegram", "42")
        said = _consolidate(app, agent)
        assert "14 older messages summarised" in said, said
        note = app.memory.read_daily(platform.utc_date())
        assert note.count(SUMMARY) == 1 and "telegram_42" in note
        kept = _contents(app)
        assert kept == ["question 7", "answer 7", "question 8", "answer 8", "question 9", "answer 9",
                        "question 10", "answer 10", "question 11", "answer 11"]
        sent = claude.calls[0]["sent"]
        assert "question 0" in sent and "answer 6" in sent and "question 7" not in sent
        assert claude.calls[0]["tools"] is None and agent.used  # counted by the budget
        assert "FACT" not in claude.calls[0]["system"]  # no remember tool here: no facts asked for
        assert not files.exists(app.sessions.journal_path("telegram_42"))
        assert not consolidate.of(app).due("telegram", "42")
        assert "nothing to consolidate" in _consolidate(app, agent)
        assert len(claude.calls) == 1
    finally:
        remove_tree(app.top)


def test_the_watch_model_summarises_when_set():
    app = _app()
    try:
        _fill(app, 11)
        app.config.override("llm_config", "watch_model", "claude-haiku-4-5")
        claude = FakeClaude()
        _consolidate(app, FakeAgent(claude))
        assert claude.calls[0]["model"] == "claude-haiku-4-5"
    finally:
        remove_tree(app.top)


def test_a_budget_refusal_or_a_failed_call_leaves_the_session_whole():
    app = _app()
    try:
        _fill(app, 12)
        before = _contents(app)
        claude = FakeClaude()
        said = _consolidate(app, FakeAgent(claude, refusal="I've used today's token budget. Bye."))
        assert "not now" in said and claude.calls == [] and _contents(app) == before
        claude.fail = True
        said = _consolidate(app, FakeAgent(claude))
        assert "failed" in said and _contents(app) == before
        assert app.memory.read_daily(platform.utc_date()) == ""
    finally:
        remove_tree(app.top)


def test_a_power_cut_after_each_step_loses_nothing_and_never_duplicates():
    for step in consolidate.STEPS:
        app = _app("cut")
        try:
            _fill(app, 12)
            every = _contents(app)
            claude = FakeClaude()

            def cut(name, step=step):
                if name == step:
                    raise PowerCut(step)

            consolidate.of(app).checkpoint = cut
            try:
                _consolidate(app, FakeAgent(claude))
                raise AssertionError("no power cut at " + step)
            except PowerCut:
                pass
            app.consolidator = None  # the reboot: a fresh consolidator on the same flash
            _consolidate(app, FakeAgent(claude))
            note = app.memory.read_daily(platform.utc_date())
            assert note.count(SUMMARY) == 1, (step, note)
            kept = _contents(app)
            assert kept == every[14:], (step, kept)
            assert len(claude.calls) == 1, step  # the journal kept the summary: no second call
            assert not files.exists(app.sessions.journal_path("telegram_42")), step
        finally:
            remove_tree(app.top)


def test_a_cut_during_the_summary_call_writes_nothing_and_the_next_run_does_it_once():
    app = _app()
    try:
        _fill(app, 12)
        claude = FakeClaude()
        claude.fail = True
        _consolidate(app, FakeAgent(claude))
        claude.fail = False
        _consolidate(app, FakeAgent(claude))
        assert app.memory.read_daily(platform.utc_date()).count(SUMMARY) == 1
        assert len(_contents(app)) == 10
    finally:
        remove_tree(app.top)


def test_a_session_that_grew_meanwhile_keeps_its_new_turns():
    app = _app()
    try:
        _fill(app, 12)
        consolidate.of(app).checkpoint = lambda name: app.sessions.append(
            "telegram", "42", "user", "late message", 2000) if name == "journal" else None
        _consolidate(app, FakeAgent(FakeClaude()))
        assert _contents(app)[-1] == "late message" and len(_contents(app)) == 11
    finally:
        remove_tree(app.top)


def test_facts_go_through_remember_only_for_an_owner_and_never_twice():
    from mimi.tools.loading import load_builtins
    from mimi.tools.registry import Registry

    app = _app()
    try:
        app.agent = Holder()
        app.agent.after_turn = []
        app.console = Holder()
        from mimi.channels.commands import Commands

        app.console.commands = Commands(app, app.console)
        app.registry = Registry(app)
        load_builtins(app.registry, ["mimi.tools.memory_tools"])
        assert "memory_consolidate" in app.console.commands.names() and app.agent.after_turn
        _fill(app, 12)
        claude = FakeClaude()
        said = _consolidate(app, FakeAgent(claude))
        assert "FACT" in claude.calls[0]["system"]
        assert "1 saved to MEMORY.md" in said
        memory = read(app.flash.memory_path)
        assert memory.count("The owner's sister is called Ada.") == 1
        _fill(app, 6)
        _consolidate(app, FakeAgent(claude))  # the same fact proposed again: not written twice
        assert read(app.flash.memory_path).count("sister is called Ada") == 1
        # An observer's chat: no facts asked for
        calls = len(claude.calls)
        _fill(app, 6)
        message = Message("telegram", "42", "hi", {"role": "observer"})
        run(consolidate.of(app).run(FakeAgent(claude), message, "telegram", "42", False, "observer"))
        assert len(claude.calls) == calls + 1 and "FACT" not in claude.calls[-1]["system"]
    finally:
        remove_tree(app.top)


def test_a_chat_that_is_not_the_owners_is_summarised_into_itself_once_across_power_cuts_never_into_memory():
    for step in ("journal", "session", None):  # a power cut after the summary is kept, after the rewrite, none
        app = _app("guest")
        try:
            _fill(app, 12, "7")  # telegram_7: an observer's private chat
            every = _contents(app, "7")
            claude = FakeClaude()

            def cut(name, step=step):
                if name == step:
                    raise PowerCut(step)

            consolidate.of(app).checkpoint = cut
            message = Message("telegram", "7", "hi", {"role": "observer"})
            try:
                said = run(consolidate.of(app).run(FakeAgent(claude), message, "telegram", "7", False, "observer"))
                assert step is None and "14 older messages summarised into the chat itself" in said, said
            except PowerCut:
                app.consolidator = None  # the reboot: the next run finishes from the journal
                said = run(consolidate.of(app).run(FakeAgent(claude), message, "telegram", "7", False, "observer"))
                assert "telegram_7" in said and "chat itself" in said, said
            kept = _contents(app, "7")
            assert kept == ["[earlier in this chat]", "Summary of the earlier part of this chat: " + SUMMARY] + every[14:]
            assert len(claude.calls) == 1 and "FACT" not in claude.calls[0]["system"]  # no facts asked for
            assert app.memory.read_daily(platform.utc_date()) == "" and "Ada" not in read(app.flash.memory_path)
            assert not files.exists(app.sessions.journal_path("telegram_7"))
        finally:
            remove_tree(app.top)


def test_a_chat_is_the_owners_only_when_known_to_be_at_that_time():
    from mimi.safety import roles

    app = _app("whose")
    config = app.config
    assert roles.of_conversation(config, "cli", "console") == "owner"
    assert roles.of_conversation(config, "telegram", "42") == "owner"  # the owner's private chat
    assert roles.of_conversation(config, "telegram", "42", "operator") == "operator"  # never more than the turn
    assert roles.of_conversation(config, "telegram", "7") == "observer"
    assert roles.of_conversation(config, "telegram", "555") == "observer"  # not on the allowlist
    assert roles.of_conversation(config, "telegram", "-100123") == "observer"  # a group: others read it
    assert roles.of_conversation(config, "websocket", "observer.web_1") == "observer"  # a client of another role
    assert roles.of_conversation(config, "websocket", "web_1") == "owner"
    assert roles.of_conversation(config, "mcp", "192-168-1-5_3fa2c1") == "observer"  # mcp_role's default
    config.override("mcp_config", "role", "owner")
    assert roles.of_conversation(config, "mcp", "192-168-1-5_3fa2c1") == "owner"
    assert roles.of_conversation(config, "system", "telegram:42") == "observer"  # no such chat: the least
    remove_tree(app.top)


def test_parse_reply_is_lenient_and_bounded():
    assert consolidate.parse_reply("SUMMARY: a b\nFACT: x\nFACT: y") == ("a b", ["x", "y"])
    assert consolidate.parse_reply("Just prose.\nMore.") == ("Just prose. More.", [])
    summary, facts = consolidate.parse_reply("SUMMARY: " + "w " * 1000 + "\n" + "FACT: f\n" * 9)
    assert len(summary) <= consolidate.SUMMARY_MAX and len(facts) == consolidate.FACTS_MAX
    assert consolidate.parse_reply("") == ("", [])


def test_by_hand_names_a_chat_and_says_what_happened():
    app = _app()
    try:
        app.agent = FakeAgent(FakeClaude())
        _fill(app, 3)
        assert "nothing to consolidate" in run(consolidate.by_hand(app, "telegram_42"))
        _fill(app, 5)
        said = run(consolidate.by_hand(app, "42"))
        assert "summarised" in said and len(_contents(app)) == 10
        assert "no conversation" in run(consolidate.by_hand(app, "nobody"))
    finally:
        remove_tree(app.top)


def _write_ascii_escaped(f, text):
    # how CPython's json.dumps writes a text: every non-ASCII character escaped, a surrogate pair beyond U+FFFF
    import json

    for c in text:
        code = ord(c)
        if code < 0x80:
            f.write(json.dumps(c)[1:-1].encode())
        elif code > 0xFFFF:
            code -= 0x10000
            f.write("\\u{:04x}\\u{:04x}".format(0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)).encode())
        else:
            f.write("\\u{:04x}".format(code).encode())


def _escaped(text):  # as the request writes a str (jsontext.escaped): bytes of the JSON string's inside
    return b"".join(jsontext.escaped(text))


def _cut_as_before(content):  # consolidate.transcript's cut of one message before it read in slices
    text = content.strip()
    if len(text) > consolidate.MESSAGE_CHARS:
        text = text[: consolidate.MESSAGE_CHARS] + " [...]"
    return text


def _text_of(i, odd):
    if i < 8:  # about 2 KB each (past the 1200-character cut), pieces shifted by i across slice edges
        return "x" * i + "".join(odd[(i + k) % 4] for k in range(150))
    return ("  " + " " * 1300 + "late start \U0001F600" + " \n" * 600, "   \n\t ", "",
            "a" * 1195 + " " * 500, "a" * 1195 + " " * 10 + "b" + " " * 10, "\u00e9" * 1200 + " \n",
            "\u00e9" * 1199 + "\U0001F600" + "\n" * 3 + "z")[i - 8]


def test_long_messages_are_read_in_slices_and_shown_as_when_parsed_whole():
    """2 KB replies with emoji, escapes and whitespace across every slice edge, lines as the other runtime
    escapes them and lines in another form: the transcript, the count and the kept lines are as before."""
    import gc
    import hashlib

    from mimi.storage.session_lines import LINE_MAX, parse_message

    app = _app("slices")
    try:
        app.sessions = Sessions(app.flash.sessions_dir, 1024 * 1024)
        path = app.sessions.path("telegram", "42")
        odd = ["caf\u00e9 \"q\" \\ \u2603 \U0001F600\n\t\x01 ", "\U0001F355" * 3, "\\u00e9 \\\"", "a\u00e9\\"]
        for i in range(15):
            role = "user" if i % 2 == 0 else "assistant"
            if i in (3, 8):  # as the other runtime writes it (ASCII escapes: 1200 é would be a 7 KB line)
                with open(path, "ab") as f:
                    f.write('{{"role":"{}","content":"'.format(role).encode())
                    _write_ascii_escaped(f, _text_of(i, odd)[:1500])
                    f.write(b'","ts":7}\n')
            else:
                app.sessions.append("telegram", "42", role, _text_of(i, odd), 1000 + i)
        with open(path, "ab") as f:  # another key order, a lone surrogate, a torn line, an empty one
            f.write(b'{"content":"  other \\u00e9 form","role":"user"}\n')
            f.write(b'{"role":"assistant","content":"lone \\ud83d half","ts":3}\n\n{"role":"user","cont\n')
        for i in range(12):
            app.sessions.append("telegram", "42", "user" if i % 2 == 0 else "assistant", odd[i % 4] * 60, 5)
        gc.collect()
        total = 0
        with open(path, "rb") as f:  # a line at a time (files.iter_lines joins 512-byte reads: no hole here)
            for line in f:
                total += parse_message(line[:-1]) is not None
        consolidator = consolidate.of(app)
        assert consolidate.count(path) == total
        n, last = consolidate.oldest(path, total, consolidate.KEEP)
        with open(path, "rb") as f:
            picked = list(consolidate._messages(f, n))
        # the messages as parsed whole, the transcript as the joined text gave it, escaped as the request
        # writes it (compared by hash: a small test heap has no hole for it) and the lines kept after them
        seen, size, index, dropped, done = 0, 0, 0, 0, False
        out, kept = [hashlib.sha256(), hashlib.sha256()], [hashlib.sha256(), hashlib.sha256()]
        out[0].update(b"The older part of the chat, oldest first:\\n")
        with open(path, "rb") as f:
            for line in f:
                line = line[:-1] if line.endswith(b"\n") else line
                message = parse_message(line) if len(line) <= LINE_MAX else None
                if message is not None and seen >= total - consolidate.KEEP and message["role"] == "user":
                    done = True
                if done:
                    if message is not None:
                        kept[0].update(line + b"\n")
                    continue
                index += 1
                if message is None:
                    continue
                role, text, cut = picked[seen]
                seen, dropped = seen + 1, index
                assert role == message["role"]
                assert "".join(text) + (" [...]" if cut else "") == _cut_as_before(message["content"])
                assert max([len(piece.encode()) for piece in text] + [0]) <= 512
                piece = "\n{}: {}\n".format("User" if role == "user" else "Mimi", _cut_as_before(message["content"]))
                size += len(piece)
                if size <= consolidate.TRANSCRIPT_MAX:
                    out[0].update(_escaped(piece))
                elif size - len(piece) <= consolidate.TRANSCRIPT_MAX:
                    out[0].update(b"\\n[... the rest is left out]\\n")
        assert n == seen == len(picked) and n > 15 and size > consolidate.TRANSCRIPT_MAX
        transcript = consolidate.Transcript(path, n)
        for chunk in transcript.chunks():
            out[1].update(chunk)
        assert out[0].digest() == out[1].digest()
        assert len(transcript) == sum(len(chunk) for chunk in transcript.chunks())
        del picked
        # the session keeps its newest valid lines byte for byte
        assert consolidator.drop("telegram_42", n, last) == dropped
        with open(path, "rb") as f:
            for line in f:
                kept[1].update(line)
        assert kept[0].digest() == kept[1].digest()
    finally:
        remove_tree(app.top)


_LOADED = ("mimi.agent.consolidate",)


def _loaded():
    import sys

    import mimi.agent

    return [name for name in _LOADED if name in sys.modules or hasattr(mimi.agent, name.rpartition(".")[2])]


def _booted(claude):
    """An app whose agent has the after-turn hook a boot adds (tools/loading.py AFTER_TURN), consolidation not loaded."""
    from mimi.channels.commands import Commands
    from mimi.tools.loading import load_builtins
    from mimi.tools.registry import Registry

    app = _app("hook")
    app.agent = FakeAgent(claude)
    app.agent.after_turn = []
    app.console = Holder()
    app.console.commands = Commands(app, app.console)
    load_builtins(Registry(app), ["mimi.tools.memory_tools"])
    for name in _LOADED:
        heap.forget(name)
    assert not _loaded()
    return app


def _turn(app, chat="42"):
    session = ("telegram", chat)
    run(app.agent.after_turn[0](app.agent, Message("telegram", chat, "hi", {"role": "owner"}), session))


def test_the_transcript_is_read_from_the_session_a_message_at_a_time_as_it_is_sent():
    """The summary call's 12 KB transcript (here of snowmen: 36 KB of UTF-8) is never whole in RAM: while the
    request is written, at most about one message's text is held beside the session file being read."""
    import gc

    tracing = not hasattr(gc, "mem_alloc")
    if tracing:
        import tracemalloc

        tracemalloc.start()
    app = _app("held")
    try:
        app.sessions = Sessions(app.flash.sessions_dir, 1024 * 1024)
        for i in range(24):
            app.sessions.append("telegram", "42", "user" if i % 2 == 0 else "assistant",
                                "\u2603" * (consolidate.MESSAGE_CHARS + 50), 1000 + i)
        n, _ = consolidate.oldest(app.sessions.path("telegram", "42"), 24, consolidate.KEEP)
        transcript = consolidate.Transcript(app.sessions.path("telegram", "42"), n)
        before, most, size = _held_bytes(), 0, 0
        for chunk in transcript.chunks():
            size += len(chunk)
            most = max(most, _held_bytes() - before)
    finally:
        if tracing:
            tracemalloc.stop()
        remove_tree(app.top)
    assert size > consolidate.TRANSCRIPT_MAX * 2  # nearly 12,288 snowmen: 3 UTF-8 bytes each, or 6 escaped
    assert most < consolidate.TRANSCRIPT_MAX, most  # a message's 1,200 characters, not 12,288


def test_both_wires_send_the_transcript_read_from_the_session_as_the_user_message():
    """The Messages API body and an OpenAI-compatible profile's (llm_for summary) carry the transcript as the user
    message's string, byte for byte what the pieces give, from the session file as it is when sent."""
    import json

    from mimi.llm.claude import JsonBody
    from mimi.llm.openai_request import ChatBody, messages_of
    from test_json_body import _flat as _written  # as net/http writes the pieces

    app = _app("wires")
    try:
        _fill(app, 12)
        n, _ = consolidate.oldest(app.sessions.path("telegram", "42"), 24, consolidate.KEEP)
        path = app.sessions.path("telegram", "42")
        transcript = consolidate.Transcript(path, n)
        with open(path, "rb") as f:
            expected = "".join(consolidate.transcript(consolidate._messages(f, n)))
        assert expected.startswith("The older part of the chat") and "\nUser: question 6\n" in expected
        assert "question 7" not in expected and transcript.text() == expected
        messages = [{"role": "user", "content": transcript}]
        for body, at in ((JsonBody("s", messages, None, "claude-x", 500), 0),
                         (ChatBody("m", messages_of("s", messages), None, 500, "max_tokens"), 1)):
            sent = b"".join(_written(body.pieces()))
            assert json.loads(sent)["messages"][at] == {"role": "user", "content": expected}
        remove_tree(app.flash.sessions_dir)
        assert "gone" in str(_raised(lambda: len(consolidate.Transcript(path, n))))
    finally:
        remove_tree(app.top)


def _raised(fn):
    try:
        fn()
    except OSError as exc:
        return exc
    raise AssertionError("no OSError")


def _held_bytes():
    import gc

    gc.collect()
    if hasattr(gc, "mem_alloc"):
        return gc.mem_alloc()
    import tracemalloc

    return tracemalloc.get_traced_memory()[0]


def test_a_turn_on_a_short_session_leaves_consolidation_unloaded():
    app = _booted(FakeClaude())
    try:
        _fill(app, 10)  # 20 messages: at the cap, not over it
        _turn(app)
        assert not _loaded() and not hasattr(app, "consolidator")  # never imported: no consolidator made
        assert app.agent.models.calls == [] and len(_contents(app)) == 20
        assert not app.sessions.may_consolidate("telegram", "42")
        _fill(app, 1)
        assert app.sessions.may_consolidate("telegram", "42")
        assert not app.sessions.may_consolidate("system", "42")  # cron and heartbeat chats never are
        files.write_atomic(app.sessions.journal_path("telegram_7"), "{}")
        assert app.sessions.may_consolidate("telegram", "7")  # a summary waiting to be applied
    finally:
        remove_tree(app.top)


def test_consolidation_is_unloaded_after_its_run_and_loaded_again_for_the_next():
    claude = FakeClaude()
    app = _booted(claude)
    try:

        _fill(app, 11)
        _turn(app)
        assert len(claude.calls) == 1 and len(_contents(app)) == 10
        assert app.memory.read_daily(platform.utc_date()).count(SUMMARY) == 1
        assert claude.calls[0]["loaded"] == list(_LOADED)  # loaded for the run (the hook imported it) ...
        assert not _loaded() and app.consolidator is None  # ... and nothing of it left on the heap after

        _fill(app, 6)
        claude.reply = "SUMMARY: Then the user asked twelve more questions."
        _turn(app)  # a later one imports it again and works the same
        assert len(claude.calls) == 2 and len(_contents(app)) == 10
        assert "twelve more questions" in app.memory.read_daily(platform.utc_date())
        assert claude.calls[1]["loaded"] == list(_LOADED) and not _loaded() and app.consolidator is None
    finally:
        remove_tree(app.top)


class SlowClaude(FakeClaude):
    """Answers only once `go` is set: a summary call still under way."""

    def __init__(self):
        import asyncio

        super().__init__()
        self.go = asyncio.Event()

    async def stream(self, *args, **kwargs):
        await self.go.wait()
        return await super().stream(*args, **kwargs)


def test_a_run_ending_while_another_chat_consolidates_unloads_nothing():
    import asyncio

    claude = SlowClaude()
    app = _booted(claude)
    try:
        _fill(app, 11)
        _fill(app, 3, "43")

        async def both():
            slow = asyncio.create_task(app.agent.after_turn[0](
                app.agent, Message("telegram", "42", "hi", {"role": "owner"}), ("telegram", "42")))
            while not app.__dict__.get("consolidator") or not app.consolidator.busy:
                await asyncio.sleep(0)
            from mimi.agent import consolidate as loaded  # as the memory_consolidate command does

            assert "nothing to consolidate" in await loaded.by_hand(app, "43")
            assert _loaded() == list(_LOADED) and app.consolidator.busy == ["telegram_42"]
            claude.go.set()
            await slow

        run(both())
        assert len(claude.calls) == 1 and len(_contents(app)) == 10
        assert not _loaded() and app.consolidator is None
    finally:
        remove_tree(app.top)
