# Model profiles and their chain: the lines and prices checked, LAN profiles free, a job's profile first, and the
# failover rules (which failures go to the next profile, never once text was shown, the note, a budget spent).
import esp32
from support import raises, run

from mimi.settings import Config
from mimi.llm import profiles
from mimi.llm.errors import ModelError
from mimi.llm.models import Models, Route, note


def _config():
    esp32.set_flash_dir(None)
    return Config()


class Result:
    def __init__(self, text="ok", model="m"):
        self.text, self.model, self.usage, self.stop_reason = text, model, {}, "end_turn"


class Client:
    """A model client answering from a script: a Result, or a ModelError to raise; records each call's profile."""

    def __init__(self, *script):
        self.script, self.calls = list(script), []

    async def stream(self, *args, **kwargs):
        profile = args[0] if args and isinstance(args[0], profiles.Profile) else kwargs.get("profile")
        self.calls.append(getattr(profile, "name", "claude"))
        outcome = self.script.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        on_delta = None if isinstance(args[0], profiles.Profile) else kwargs.get("on_delta")
        if on_delta is not None and outcome.text:
            await on_delta(outcome.text)
        return outcome


def _models(config, claude, local):
    models = Models(config)
    models.claude = lambda: claude  # the client a call makes, a fake here
    models.openai = local
    return models


def _with_local(config, chain="claude,local", line="local openai http://192.168.1.20:11434/v1 qwen2.5:7b"):
    config.set("llm_profiles", "p1", line)
    config.set("llm_config", "chain", chain)


def test_profile_lines_names_and_prices_are_checked_and_tidied():
    assert profiles.check_line("Local OPENAI http://10.0.0.2:8080/v1 llama 0.150/0.6") == \
        "local openai http://10.0.0.2:8080/v1 llama 0.15/0.6"
    for bad in ("claude anthropic https://x.example m", "x grpc http://h/v1 m", "x openai ftp://h m",
                "two words", "n\u00e4me openai http://h m"):
        raises(ValueError, profiles.check_line, bad)
    assert profiles.parse_price("3/15") == (3000000, 15000000) and profiles.price_text((150000, 600000)) == "0.15/0.6"
    raises(ValueError, profiles.parse_price, "3")
    assert profiles.check_names("claude, Local,claude") == "claude,local"
    config = _config()
    raises(ValueError, config.set, "llm_profiles", "p1", "bad line")  # every path that writes it checks it
    raises(ValueError, config.set, "llm_config", "chain", "no spaces allowed")


def test_lan_profiles_are_free_unless_priced_and_claude_never_is():
    for url, lan in (("http://192.168.1.20:11434/v1", True), ("http://10.1.2.3/v1", True), ("http://mybox:8080/v1", True),
                     ("http://nas.local:1234/v1", True), ("http://172.20.0.1/v1", True), ("http://[fd00::5]:11434/v1", True),
                     ("https://openrouter.ai/api/v1", False), ("http://172.32.0.1/v1", False)):
        assert profiles.on_lan(url) is lan, url
    config = _config()
    _with_local(config)
    assert profiles.find(config, "local").free and not profiles.find(config, "claude").free
    config.set("llm_profiles", "p1", "local openai http://192.168.1.20:11434/v1 qwen 0.1/0.2")
    local = profiles.find(config, "local")
    assert not local.free and local.cost([1000000, 1000000, 0, 0]) == 300000  # $0.30
    config.set("llm_config", "api_base", "http://127.0.0.1:9")
    assert not profiles.find(config, "claude").free  # claude costs its list price wherever it is


def test_a_jobs_profile_comes_before_the_chain():
    config = _config()
    _with_local(config, chain="claude,local")
    config.set("llm_config", "for_watcher", "local")
    assert [p.name for p in profiles.chain(config, "watcher")] == ["local", "claude"]
    assert [p.name for p in profiles.chain(config)] == ["claude", "local"]
    config.set("llm_config", "chain", "claude,gone")
    assert [p.name for p in profiles.chain(config)] == ["claude"]  # a removed profile is left out


def test_the_default_chain_is_claude_alone_and_nothing_else_is_asked():
    config = _config()
    claude, local = Client(Result("hi")), Client()
    models = _models(config, claude, local)
    assert models.plain() and not models.has_free()
    result = run(models.stream("s", []))
    assert result.profile == "claude" and claude.calls == ["claude"] and local.calls == []


def test_failover_before_text_marks_the_reply_and_never_after():
    config = _config()
    _with_local(config)
    overloaded = ModelError("overloaded_error", "Claude is overloaded right now (529).", True, 529)
    claude, local = Client(overloaded), Client(Result("from local"))
    models = _models(config, claude, local)
    route = Route()
    result = run(models.stream("s", [], route=route))
    assert result.profile == "local" and claude.calls == ["claude"] and local.calls == ["local"]
    assert note(route) == "\n\n\u2014 answered by local (claude overloaded)"
    shown = []

    async def on_delta(text):
        shown.append(text)

    route = Route()
    route.shown = True  # an earlier round of this turn already showed text
    claude.script.append(ModelError("network", "Cannot reach the Anthropic API", True))
    error = raises(ModelError, run, models.stream("s", [], on_delta=on_delta, route=route))
    assert error.kind == "network" and local.calls == ["local"]  # never a second answer


def test_a_request_the_api_refused_does_not_go_to_the_next_profile():
    config = _config()
    _with_local(config)
    claude, local = Client(ModelError("invalid_request_error", "rejected (400)", False, 400)), Client()
    raises(ModelError, run, _models(config, claude, local).stream("s", []))
    assert local.calls == []


def test_a_refused_key_is_told_once_and_the_last_error_names_the_ones_before():
    config = _config()
    _with_local(config)
    told = []
    refused = ModelError("authentication_error", "The Anthropic API key was refused (401).", False, 401)
    claude = Client(refused, refused)
    local = Client(Result("one"), ModelError("network", "Cannot reach model profile local", True))
    models = _models(config, claude, local)
    models.tell = told.append
    run(models.stream("s", []))
    config.set("llm_config", "api_key", "sk-ant-another-key-entirely")  # a new key: claude is asked again
    error = raises(ModelError, run, models.stream("s", []))
    assert len(told) == 1 and "answers meanwhile" in told[0] and claude.calls == ["claude", "claude"]
    assert error.message == "Cannot reach model profile local (claude refused its key)"


def test_a_spent_budget_skips_priced_profiles_for_a_free_one():
    config = _config()
    _with_local(config)
    claude, local = Client(), Client(Result("free"))
    models = _models(config, claude, local)
    models.budget_spent = lambda: True
    assert models.has_free()
    route = Route()
    assert run(models.stream("s", [], route=route)).profile == "local" and claude.calls == []
    assert "claude over today's budget" in note(route)
    config.set("llm_config", "fallback", 0)
    assert not models.has_free()


def test_tools_are_asked_for_per_profile():
    config = _config()
    _with_local(config, chain="local")
    asked = []

    def tools(server, model):
        asked.append((server, model))
        return []

    run(_models(config, Client(), Client(Result())).stream("s", [], tools=tools))
    assert asked == [(False, "qwen2.5:7b")]  # an openai profile: no server tools


def test_a_profile_that_could_not_answer_rests_and_later_calls_ask_the_next_at_once():
    config = _config()
    _with_local(config)
    down = ModelError("network", "Cannot reach the Anthropic API: timed out", True)
    claude, local = Client(down, Result("claude is back")), Client(Result("one"), Result("two"))
    models = _models(config, claude, local)
    run(models.stream("s", []))
    route = Route()
    assert run(models.stream("s", [], route=route)).text == "two"
    assert claude.calls == ["claude"]  # not asked again while it rests: no retries paid for
    assert note(route).startswith("\n\n\u2014 answered by local (claude resting ") and "s more: unreachable" in note(route)
    models.rests["claude"] = (models.rests["claude"][0] - 61000,) + models.rests["claude"][1:]  # a minute on
    assert run(models.stream("s", [])).text == "claude is back" and "claude" not in models.rests
    config.set("llm_config", "chain", "local,claude")
    local.script.append(ModelError("network", "Cannot reach model profile local", True))
    claude.script.append(Result("last"))
    run(models.stream("s", []))
    assert models.rests["local"][1] == 60
    local.script.append(ModelError("network", "Cannot reach model profile local", True))
    claude.script.append(Result("again"))
    models.rests["local"] = (models.rests["local"][0] - 61000,) + models.rests["local"][1:]
    run(models.stream("s", []))
    assert models.rests["local"][1] == 120  # failing again: a longer rest
    config.set("llm_config", "chain", "local")
    local.script.append(Result("the last is always asked"))
    assert run(models.stream("s", [])).text == "the last is always asked"


def test_a_litellm_proxy_s_400_for_a_key_or_a_model_goes_to_the_next_profile():
    from mimi.llm import chain, explain

    for said in ("Authentication Error, No connected db.", "{'error': '/chat/completions: Invalid model name "
                                                            "passed in model=qwen9. Call `/v1/models` to view'}"):
        raw = ('{"error": {"message": "' + said.replace('"', '\\"') + '\\nsecond line", "type": "None", '
               '"param": "None", "code": "400"}}').encode()
        error = ModelError(*explain.answer(400, {}, raw, "qwen9", "proxy"))
        assert error.kind == "cannot_answer" and chain.fails_over(error)
        assert error.message == "Model profile proxy cannot answer (400): " + said
    other = ModelError(*explain.answer(400, {}, b'{"error": {"message": "messages: bad role"}}', "m", "proxy"))
    assert other.kind != "cannot_answer" and not chain.fails_over(other)
    window = ModelError(*explain.answer(400, {}, b'{"error": {"code": 400, "message": "request (4476 tokens) exceeds '
                                        b'the available context size (4096 tokens)", "type": "exceed_context_size_'
                                        b'error", "n_prompt_tokens": 4476, "n_ctx": 4096}}', "m", "lan"))
    assert chain.fails_over(window) and "llm_ctx lan <tokens>" in window.message


def test_the_clients_code_is_let_go_after_a_call_only_where_the_heap_has_no_psram():
    import sys

    from mimi import heap

    models = _models(_config(), Client(Result(), Result()), None)
    try:
        # One of a call's modules, loaded as a call loads it; only the clients import it, and they go with it.
        from mimi.llm import retry  # noqa: F401

        heap.choose(8 * 1024 * 1024)  # a board with PSRAM keeps the clients' code between calls
        run(models.stream("s", []))
        assert "mimi.llm.retry" in sys.modules
        heap.choose(1024 * 1024)  # a heap under 2 MB
        run(models.stream("s", []))
        assert "mimi.llm.retry" not in sys.modules  # gone once no call is under way; the next call loads it again
    finally:
        heap.choose(8 * 1024 * 1024)  # roomy, as before a boot chose (heap.py): as the other tests find it


# -- issue 41: a profile's key stays with its host; a key typed as the model is refused, never shown --
LAN_KEY = "sk-or-v1-" + "LanKey7" * 6


def _console(tag):
    """An app with the llm_* commands, and type(line): what the console prints for it."""
    from stub_app import stub_app, typing

    from mimi.llm import COMMANDS

    app = stub_app(tag)
    app.console.commands.add_lines(COMMANDS)
    return app, typing(app)


def test_llm_add_moving_a_profile_to_another_host_drops_its_key_and_says_so():
    from support import remove_tree

    app, typed = _console("llm-key-host")
    try:
        assert "profile lk added" in typed("llm_add lk openai http://192.168.1.20:11434/v1 qwen " + LAN_KEY)
        out = typed("llm_add lk openai HTTP://192.168.1.20:11434/v2 qwen2".replace("HTTP", "http"))
        assert "profile lk changed" in out and "key sk-o" in out and "dropped" not in out  # same host: kept
        said = typed("llm_add lk openai http://another-host/v1 m").split("\n")[0]
        assert said == "profile lk changed: openai http://another-host/v1 m, key none, free (on the LAN; llm_price " \
                       "to count it), window 4096 tokens (default); key dropped: the host changed", said
        assert profiles.find(app.config, "lk").key == "" and not app.config.is_set("llm_profiles", "k1")
        out = typed("llm_add lk openai http://third-host/v1 m " + LAN_KEY)  # a key given with the move: kept
        assert "dropped" not in out and profiles.find(app.config, "lk").key == LAN_KEY
        out = typed("config_set llm_profiles.p1 lk openai http://third-host:8080/v1 m")  # the port is the host's
        assert out == "llm_profiles.p1 = lk openai http://third-host:8080/v1 m (saved; in effect now); " \
                      "key dropped: the host changed\n", out
        assert profiles.find(app.config, "lk").key == ""
        app.config.set("llm_config", "api_key", "sk-ant-api03-" + "A1" * 20)
        out = typed("llm_add claude anthropic https://proxy.example claude-x")
        assert out.rstrip("\n").endswith("; key dropped: the host changed") and not app.config.is_set(
            "llm_config", "api_key")
    finally:
        remove_tree(app.top)


def test_a_key_typed_where_the_model_goes_is_refused_and_never_shown():
    from support import remove_tree

    app, typed = _console("llm-key-model")
    try:
        for line in ("llm_add typo openai http://host/v1 " + LAN_KEY, "llm_add " + LAN_KEY + " openai http://h/v1 m",
                     "llm_add typo " + LAN_KEY + " http://h/v1 m", "set_model " + LAN_KEY,
                     "llm_add claude anthropic https://api.anthropic.com " + LAN_KEY):
            out = typed(line)
            assert out.startswith("error: ") and "looks like a key" in out and "LanKey" not in out, (line, out)
        assert profiles.slots(app.config) == [] and not app.config.is_set("llm_config", "model")
        out = typed("llm_add e3 openai http://[::1 m")
        assert out == "error: the URL opens an IPv6 address with [ and never closes it with ], e.g. " \
                      "http://192.168.1.20:11434/v1\n", out
        assert profiles.slots(app.config) == []
    finally:
        remove_tree(app.top)
