# llm/window.py: a profile's window (llm_ctx, the defaults), a request trimmed to fit it in the documented order
# (the oldest history first, then the daily notes, the skills, the core tools, MEMORY, USER; never SOUL or the
# message), the reply's room kept, and one sentence when even the least prompt cannot fit.
import esp32
from support import raises, remove_tree, tempdir, write

from mimi.agent.context import Context
from mimi.llm import profiles, window
from mimi.llm.errors import ModelError
from mimi.settings import Config
from mimi.storage import files
from mimi.storage.history_pieces import HistoryPieces
from mimi.storage.layout import Flash
from mimi.storage.memory import Memory
from mimi.storage.sessions import Sessions

_NOW = 1767268800  # 2026-01-01 12:00 UTC


def _config():
    esp32.set_flash_dir(None)
    return Config()


def test_a_profile_s_window_is_llm_ctx_s_or_its_kind_s_default():
    config = _config()
    config.set("llm_profiles", "p1", "lan openai http://192.168.1.20:11434/v1 qwen2.5:3b")
    config.set("llm_profiles", "p2", "cloud openai https://openrouter.ai/api/v1 some/model")
    config.set("llm_profiles", "p3", "proxy anthropic https://llm.example.com m")
    assert profiles.claude(config).window == 200000
    assert [profiles.find(config, n).window for n in ("lan", "cloud", "proxy")] == [4096, 128000, 200000]
    config.set("llm_profiles", "p1", "lan openai http://192.168.1.20:11434/v1 qwen2.5:3b 8192 0/0")
    assert config.get("llm_profiles", "p1") == "lan openai http://192.168.1.20:11434/v1 qwen2.5:3b 0/0 8192"
    lan = profiles.find(config, "lan")
    assert lan.window == 8192 and lan.price == (0, 0)  # kept in the profile's line, after its price
    for bad in ("lan openai http://h/v1 m 512", "lan openai http://h/v1 m 8192 4096", "lan openai http://h/v1 m big"):
        raises(ValueError, profiles.check_line, bad)


class _Tool:
    def __init__(self, name, size):
        self.name, self.size = name, size

    def __len__(self):
        return self.size


def _board(root, memory="", daily="", user="- Name: Ada\n"):
    flash = Flash(root)
    flash.seed()
    write(flash.user_path, user)
    write(flash.memory_path, memory)
    if daily:
        write(flash.daily_path("2026-01-01"), daily)
    return flash, Context(flash, Memory(flash))


def _history(root, turns, size):
    sessions = Sessions(files.join(root, "sessions"))
    for i in range(turns):
        sessions.append("cli", "console", "user", "question {} ".format(i) + "q" * size, _NOW)
        sessions.append("cli", "console", "assistant", "answer {} ".format(i) + "a" * size, _NOW)
    return HistoryPieces(sessions.path("cli", "console"), 20)


def _turn(text):
    return {"role": "user", "content": [{"type": "text", "text": "[context] now via cli"}, {"type": "text", "text": text}]}


def test_a_request_that_fits_is_sent_as_it_is_with_the_reply_s_room():
    root = tempdir()
    try:
        flash, context = _board(root)
        system = context.system_blocks(_NOW)
        messages = [_turn("hi")]
        tools = [_Tool("find_tools", 400), _Tool("read_file", 400)]
        fitted = window.fit(4096, "lan", system, messages, tools, 4096, (context, _NOW, False))
        assert fitted[0] is system and fitted[1] is messages and fitted[2] is tools
        used = window.tokens(system, messages, tools)
        assert fitted[3] == 4096 - 4096 // 8 - used  # the rest of the window, less its free eighth
        assert window.fit(200000, "claude", system, messages, tools, 4096)[3] == 4096  # max_tokens at most
    finally:
        remove_tree(root)


def test_the_oldest_history_goes_first_and_the_rest_stays_whole():
    root = tempdir()
    try:
        flash, context = _board(root, memory="# Memory\n- likes tea\n")
        history = _history(root, 8, 600)  # 16 messages of about 160 tokens
        messages = [history, _turn("and now?")]
        system = context.system_blocks(_NOW)
        fitted_system, fitted, tools, room = window.fit(4096, "lan", system, messages, None, 4096,
                                                        (context, _NOW, False))
        kept = fitted[0]
        assert fitted_system is system  # the prompt untouched: the history alone made room
        assert 0 < len(kept.records) < len(history.records) and kept.records[0][4] == "user"
        assert kept.records[-1] == history.records[-1]  # the newest kept, the oldest gone
        used = window.tokens(fitted_system, fitted, None)
        assert used <= 4096 - 4096 // 8 - 1024 and room == 4096 - 4096 // 8 - used
        assert fitted[-1] is messages[-1] and len(messages) == 2  # the caller's list unchanged
    finally:
        remove_tree(root)


def test_then_the_daily_notes_skills_core_tools_memory_and_user_go_in_that_order():
    root = tempdir()
    try:
        flash, context = _board(root, memory="- fact " * 500, daily="- did " * 200, user="- Name: Ada " * 100)
        fitting = (context, _NOW, False)
        system = context.system_blocks(_NOW)
        tools = [_Tool("find_tools", 300), _Tool("read_file", 900), _Tool("recall", 900), _Tool("cron_add", 500)]
        stages = []
        for budget in range(4000, 999, -200):  # ever smaller windows: more goes, always in the order
            text, _, kept_tools, room = window.fit(budget, "lan", system, [_turn("hi")], tools, 200, fitting)
            joined = "".join(block["text"] for block in text) if isinstance(text, list) else "".join(
                context.sections(_NOW))
            assert "# SOUL" in joined and room == 200
            stage = ([title for title in ("# Daily notes", "# MEMORY", "# USER") if title in joined],
                     [tool.name for tool in kept_tools])
            if not stages or stages[-1] != stage:
                stages.append(stage)
        assert stages == [(["# Daily notes", "# MEMORY", "# USER"], ["find_tools", "read_file", "recall", "cron_add"]),
                          (["# MEMORY", "# USER"], ["find_tools", "read_file", "recall", "cron_add"]),
                          (["# MEMORY", "# USER"], ["find_tools", "cron_add"]),  # find_tools and what it found stay
                          (["# USER"], ["find_tools", "cron_add"]),
                          ([], ["find_tools", "cron_add"])]  # SOUL and the message only
    finally:
        remove_tree(root)


def test_when_even_the_least_prompt_cannot_fit_one_sentence_says_so():
    root = tempdir()
    try:
        flash, context = _board(root)
        system = context.system_blocks(_NOW)
        exc = raises(ModelError, window.fit, 1024, "tiny", system, [_turn("x" * 6000)], None, 4096,
                     (context, _NOW, False))
        assert exc.kind == "window" and "tiny" in exc.message and "llm_ctx tiny <tokens>" in exc.message
        assert exc.message.count(". ") <= 2 and "\n" not in exc.message
    finally:
        remove_tree(root)


def test_a_photo_counts_as_a_photo_not_its_bytes():
    turn = _turn("what is this?")
    turn["content"].append({"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                                         "data": "A" * 200000}})
    assert 1600 < window.tokens(None, [turn], None) < 1700
