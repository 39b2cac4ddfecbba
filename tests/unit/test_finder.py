# Tools found when needed: a request offers the core set and find_tools (tools/finder.py), find_tools finds the
# others by their words and adds them to the turn's requests; on a Claude model that takes the tool search tool every
# tool is sent, the others deferred (llm/claude_tools.py), in the shape the API checks.
import json

from stub_app import stub_app
from support import remove_tree, run

from mimi.llm import claude_tools
from mimi.llm.body import value_pieces
from mimi.tools import loading
from mimi.tools.registry import CORE, Registry
from mimi.tools.turn import console


def _app():
    app = stub_app("finder")
    app.registry = Registry(app)
    loading.load_builtins(app.registry)
    return app


def _names(definitions):
    return [d["name"] if isinstance(d, dict) else d.name for d in definitions or ()]


def _json(tools):
    return json.loads(b"".join(bytes(piece) if not hasattr(piece, "chunks") else b"".join(bytes(c) for c in
                                                                                          piece.chunks())
                               for piece in value_pieces(tools)))


def test_a_request_offers_the_core_tools_and_find_tools_finds_the_others_for_the_turn():
    app = _app()
    try:
        registry = app.registry
        assert _names(registry.offered()) == sorted(CORE)
        assert len(registry.tools) > 20
        turn = console()
        said, failed = run(registry.execute("find_tools", {"query": "remind me in an hour"}, turn))
        assert not failed and "cron_add" in said.split("\n")[1] and "cron_add" in turn.found
        said, failed = run(registry.execute("find_tools", {"query": "switch a relay on a GPIO pin"}, turn))
        assert not failed and "gpio_write" in turn.found and len(said.split("\n")) <= 6
        offered = _names(registry.offered(turn.found))
        assert offered == sorted(set(CORE) | set(turn.found))
        said, failed = run(registry.execute("find_tools", {"query": "zzyzx"}, turn))
        assert not failed and "No tool matches" in said and "watch_add" in said and "find_tools" not in said
        said, _ = run(registry.execute("find_tools", {"query": "get_weather"}, turn))
        assert said.split("\n")[1].startswith("- get_weather: ")  # a name finds its tool first
    finally:
        remove_tree(app.top)


def test_claude_4_5_and_later_take_the_tool_search_tool():
    for model in ("claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001", "claude-opus-4-6",
                  "claude-opus-5"):
        assert claude_tools.searches_tools(model), model
    for model in ("claude-3-5-haiku-20241022", "claude-sonnet-4-20250514", "claude-opus-4-1", "qwen2.5:7b",
                  "mimi-demo", "", None):
        assert not claude_tools.searches_tools(model), model


def test_deferred_tools_are_sent_whole_with_the_search_tool_and_its_beta():
    app = _app()
    try:
        every = app.registry.definitions()
        tools = claude_tools.definitions(app.config, every, defer=True)
        sent = _json(tools)
        names = [tool["name"] for tool in sent]
        loaded = [tool["name"] for tool in sent if "defer_loading" not in tool]
        held = [tool["name"] for tool in sent if tool.get("defer_loading") is True]
        assert names == loaded + held and loaded == sorted(loaded) and held == sorted(held)  # one order, every call
        assert "find_tools" not in names and "tool_search_tool_bm25" in loaded
        assert set(CORE) - {"find_tools"} <= set(loaded) and not set(held) & set(CORE)
        assert len(names) == len(every)  # find_tools out, the search tool in (web_search swapped for Claude's own)
        assert all("type" in tool for tool in sent if tool["name"] in loaded and tool["name"] not in CORE)
        cron = [tool for tool in sent if tool["name"] == "cron_add"][0]
        original = [d for d in every if d.name == "cron_add"][0]
        assert dict(cron, defer_loading=None) == dict(json.loads(bytes(b"".join(bytes(c) for c in original.chunks()))),
                                                      defer_loading=None)
        assert len([tool for tool in tools if isinstance(tool, claude_tools.Deferred)]) == 1  # one object for all
        assert "advanced-tool-use-2025-11-20" in claude_tools.beta_header(tools)
        assert _json(claude_tools.definitions(app.config, every, defer=True)) == sent  # the same every call
    finally:
        remove_tree(app.top)
