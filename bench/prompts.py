# prompt_tokens: what each kind of request sends a model (issue 44), on Claude and on an openai profile at a
# 4,096-token LAN window, with the default files of a new board: bytes on the wire, tokens as the firmware
# estimates them (4 bytes a token) and as the fake servers bill them (Claude's: deferred tools not counted until a
# search finds them), for a plain turn, a tool turn (every round), a watcher's judgment, a heartbeat with nothing
# open and a memory consolidation; then a day of them in tokens and dollars. The firmware is the .mpy bundle under
# MicroPython. BEFORE holds the same figures taken of the tree before issue 44 (32ba447), by this module run there.
#   python -m bench --only prompt_tokens            python -m bench.prompts (the figure as JSON, nothing saved)
import json
import os
import sys

from bench.setup import API_KEY, ROOT, Firmware, fresh_dir, session_line
from host_sim import fake_anthropic, fake_openai

RUNTIME = "mpy"
WINDOW = int(os.environ.get("BENCH_PROMPTS_WINDOW", "4096")) or None  # 0: no window (the tree before llm_ctx)
CHAT = "hello, how are you today?"
ASK_TOOL = "remind me in an hour to stretch"
REMINDER = {"schedule": "in", "seconds": 3600, "message": "Remind the owner to stretch"}
ANSWER = ("I'm well, thank you! The board is up, the clock is set and I'm listening. What would you like to do "
          "today: a reminder, the weather, or something on the pins?")  # about 40 tokens, every plain answer
KINDS = ("plain", "tool", "watcher", "heartbeat", "consolidation")
# A day (issue 44): 20 chats, 5 tool turns, a heartbeat every 30 minutes with nothing open, 2 watchers judged
# hourly, 1 consolidation.
DAY = (("plain", 20), ("tool", 5), ("heartbeat", 48), ("watcher", 48), ("consolidation", 1))
PRICED = ("claude-haiku-4-5", "claude-sonnet-4-5")
HISTORY = 30  # messages in the chat that is consolidated: over the 20 kept, so the oldest are summarised
# The tree before issue 44 (32ba447), measured with this module on 2026-12-06 (the .mpy bundle, MicroPython).
BEFORE = json.loads(
    '{"claude":{"plain":{"requests":1,"bytes":14166,"tokens_est":3541,"billed_input":3400,"prefix":3364,"'
    'first_bytes":14166},"tool":{"requests":2,"bytes":29399,"tokens_est":7349,"billed_input":7055,"prefix'
    '":6728,"first_bytes":14425},"watcher":{"requests":1,"bytes":14710,"tokens_est":3677,"billed_input":3'
    '536,"prefix":3364,"first_bytes":14710},"heartbeat":{"requests":0,"bytes":0,"tokens_est":0,"billed_in'
    'put":0,"prefix":0,"first_bytes":0},"consolidation":{"requests":1,"bytes":2001,"tokens_est":500,"bill'
    'ed_input":482,"prefix":0,"first_bytes":2001}},"openai":{"plain":{"requests":1,"bytes":14729,"tokens_'
    'est":3682,"billed_input":3516,"prefix":0,"first_bytes":14729},"tool":{"requests":2,"bytes":30517,"to'
    'kens_est":7629,"billed_input":7288,"prefix":0,"first_bytes":14988},"watcher":{"requests":1,"bytes":1'
    '5273,"tokens_est":3818,"billed_input":3652,"prefix":0,"first_bytes":15273},"heartbeat":{"requests":0'
    ',"bytes":0,"tokens_est":0,"billed_input":0,"prefix":0,"first_bytes":0},"consolidation":{"requests":1'
    ',"bytes":2058,"tokens_est":514,"billed_input":484,"prefix":0,"first_bytes":2058}},"day":{"claude_tok'
    'ens":273485,"claude_usd":{"claude-haiku-4-5":0.3355,"claude-sonnet-4-5":1.0066},"lan_tokens":282540,'
    '"lan_usd":0}}')


def _said(content):
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))


def _last_call(messages):
    """The name of the tool the last assistant message called, or None."""
    for message in reversed(messages):
        if message["role"] != "assistant":
            continue
        for block in message.get("content") or () if isinstance(message.get("content"), list) else ():
            if block.get("type") == "tool_use":
                return block["name"]
        for call in message.get("tool_calls") or ():
            return call["function"]["name"]
        return None
    return None


def _step(messages, tool_names, searchable):
    """What a model does next in the bench's turns: (kind, value) of "text", "call" (name, input) or "search"."""
    last = messages[-1]
    said = _said(last.get("content") or "")
    if "[watcher" in said:
        return "text", "WATCH_OK"
    if "[heartbeat]" in said:
        return "text", "HEARTBEAT_OK"
    called = _last_call(messages) if last["role"] in ("user", "tool") and ASK_TOOL not in said else None
    if called == "find_tools":
        return "call", ("cron_add", REMINDER)
    if called:
        return "text", "Done: in an hour."
    if ASK_TOOL in said:
        if searchable:
            return "search", None
        if "cron_add" in tool_names:
            return "call", ("cron_add", REMINDER)
        return "call", ("find_tools", {"query": "remind me later"})
    if not tool_names:  # the consolidation's summary call offers no tools
        return "text", "- The owner asked about the garden; water the tomatoes twice a week."
    return "text", ANSWER


def _claude_brain(body, chunk, delay):
    tools = body.get("tools") or ()
    names = [tool.get("name") for tool in tools]
    kind, value = _step(body["messages"], names, "tool_search_tool_bm25" in names)
    if kind == "search":
        return fake_anthropic.tool_search("remind me later", ["cron_add"], calls=[("cron_add", REMINDER)])
    if kind == "call":
        return fake_anthropic.tool_use(value[0], value[1])
    return fake_anthropic.text(value, 32)


def _openai_brain(body):
    names = [tool["function"]["name"] for tool in body.get("tools") or ()]
    kind, value = _step(body["messages"], names, False)
    if kind == "call":
        return fake_openai.tool_calls(value)
    return fake_openai.text(value, 32)


def _flash(name, lan=None, history=False):
    flash = fresh_dir(name)
    nvs = {"wifi_config": {"ssid": "bench-wifi"}}
    if lan is not None:
        nvs["llm_profiles"] = {"p1": "lan openai {} qwen2.5:3b".format(lan.base)}
        nvs["llm_config"] = {"chain": "lan"}
    with open(os.path.join(flash, "nvs.json"), "w") as f:
        json.dump({ns: {k: ["blob", _b64(v)] for k, v in values.items()} for ns, values in nvs.items()}, f)
    if history:
        sessions = os.path.join(flash, "data", "sessions")
        os.makedirs(sessions)
        with open(os.path.join(sessions, "cli_console.jsonl"), "w") as f:
            for i in range(HISTORY):
                role = "user" if i % 2 == 0 else "assistant"
                f.write(session_line(role, "{} {}: the garden, the weather and the tomatoes.".format(role, i)) + "\n")
    return flash


def _b64(text):
    import base64

    return base64.b64encode(text.encode()).decode()


def _sent(record):
    """(bytes, billed input tokens) of one request."""
    size = int({k.lower(): v for k, v in record["headers"].items()}.get("content-length", 0))
    usage = record.get("usage")
    if usage is not None:  # Claude's: every input token, cached or not
        billed = usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
        return size, billed, usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    return size, record.get("prompt_tokens"), 0


def _kind(records):
    figures = [_sent(record) for record in records]
    size = sum(f[0] for f in figures)
    return {"requests": len(records), "bytes": size, "tokens_est": sum(f[0] // 4 for f in figures),
            "billed_input": sum(f[1] or 0 for f in figures), "prefix": sum(f[2] for f in figures),
            "first_bytes": figures[0][0] if figures else 0}


def _measure_wire(fake, lan, log):
    """The five kinds of request, on claude (lan None) or on the openai profile at the LAN fake."""
    server = lan if lan is not None else fake
    out = {}
    tag = "openai" if lan is not None else "claude"
    with Firmware(RUNTIME, _flash("prompts-" + tag, lan), "--anthropic-api", fake.url) as firmware:
        firmware.ready().unlimit()
        firmware.command("watch_add heat temperature 3600 tell me if the chip is above 70 C")
        for kind, line in (("plain", "chat " + CHAT), ("tool", "chat " + ASK_TOOL), ("watcher", "watch_check heat"),
                           ("heartbeat", "heartbeat_trigger")):
            server.reset()
            said = firmware.command(line, 60)
            if kind == "tool":
                assert "Remind the owner to stretch" in firmware.command("cron_list"), firmware.output[-2000:]
            if kind == "watcher":
                server.wait_requests(1, 20)
            answered = [r for r in server.requests if r["status"] == 200]
            out[kind] = _kind(answered[:1] if kind == "watcher" else answered)  # one judgment (watch_add's may follow)
            log("  {} {}: {} requests, {} bytes, ~{} tokens ({})".format(tag, kind, out[kind]["requests"],
                                                                        out[kind]["bytes"], out[kind]["tokens_est"],
                                                                        said.strip()[-60:]))
    with Firmware(RUNTIME, _flash("prompts-consolidate-" + tag, lan, history=True), "--anthropic-api",
                  fake.url) as firmware:
        firmware.ready().unlimit()
        server.reset()
        firmware.command("memory_consolidate", 60)
        out["consolidation"] = _kind([r for r in server.requests if r["status"] == 200])
        log("  {} consolidation: {} bytes".format(tag, out["consolidation"]["bytes"]))
    return out


def _cost():
    """The firmware's own pricing (safety/prices.py: Anthropic's list, cache writes 1.25x, reads 0.1x)."""
    sys.path[:0] = [os.path.join(ROOT, "firmware"), os.path.join(ROOT, "host_sim", "standins")]
    from mimi.safety import prices

    return prices.cost_micro_usd


def day(claude, lan_kinds):
    """Tokens and dollars of the day (DAY): each turn's first request writes its cached prefix (the turns are
    minutes apart: the cache's 5 minutes are gone), its later rounds read it; every reply about 40 tokens."""
    cost = _cost()
    tokens = sum(claude[kind]["billed_input"] * n for kind, n in DAY)
    usd = {}
    for model in PRICED:
        total = 0
        for kind, n in DAY:
            f = claude[kind]
            if not f["requests"]:
                continue
            written = f["prefix"] // f["requests"]  # the first request's prefix, written; the rest read it
            read = f["prefix"] - written
            plain = f["billed_input"] - f["prefix"]
            total += n * cost(model, [plain, 40 * f["requests"], read, written])
        usd[model] = round(total / 1e6, 4)
    return {"claude_tokens": tokens, "claude_usd": usd,
            "lan_tokens": sum(lan_kinds[kind]["billed_input"] * n for kind, n in DAY), "lan_usd": 0}


def goals(figure):
    """(met, why) of issue 44's goals; None for met when there is no figure from before to hold it against."""
    figure = figure[RUNTIME]
    plain = figure["openai"]["plain"]["tokens_est"]
    claude = figure["claude"]["plain"]["billed_input"]
    before = figure.get("before")
    why = "a plain turn ~{} tokens on the {}-token profile; on Claude {} billed input".format(
        plain, figure["window"], claude)
    if before is None:
        return None, why + " (nothing from before issue 44 to compare)"
    was = before["claude"]["plain"]["billed_input"]
    day_now, day_was = figure["day"]["claude_tokens"], before["day"]["claude_tokens"]
    why += " (was {}); the day {} tokens on Claude (was {})".format(was, day_now, day_was)
    return plain <= 1200 and 2 * claude <= was and 2 * day_now <= day_was, why


def rows(figure):
    """(what, value) rows of the table: each wire's kinds of request, then the day."""
    figure = figure[RUNTIME]
    out = []
    before = figure.get("before") or {}
    for wire in ("claude", "openai"):
        for kind in KINDS:
            f = figure[wire][kind]
            was = (before.get(wire) or {}).get(kind)
            value = "{} requests, {} bytes, ~{} tokens, billed {}".format(f["requests"], f["bytes"], f["tokens_est"],
                                                                         f["billed_input"])
            if was:
                value += " (before: {} bytes, billed {})".format(was["bytes"], was["billed_input"])
            out.append(("{} {}".format(wire, kind), value))
    d = figure["day"]
    value = "Claude {} tokens, ${} on Haiku 4.5, ${} on Sonnet 4.5; LAN profile {} tokens, $0".format(
        d["claude_tokens"], d["claude_usd"]["claude-haiku-4-5"], d["claude_usd"]["claude-sonnet-4-5"], d["lan_tokens"])
    if before:
        b = before["day"]
        value += " (before: {} tokens, ${} / ${}; LAN {})".format(
            b["claude_tokens"], b["claude_usd"]["claude-haiku-4-5"], b["claude_usd"]["claude-sonnet-4-5"],
            b["lan_tokens"])
    out.append(("a day", value))
    return out


def measure(fake, log):
    saved = fake.brain
    fake.brain = _claude_brain
    lan = fake_openai.FakeOpenAI("llamacpp", window=WINDOW, brain=_openai_brain)
    lan.start()
    try:
        claude = _measure_wire(fake, None, log)
        openai = _measure_wire(fake, lan, log)
    finally:
        lan.stop()
        fake.brain = saved
        fake.reset()
    figure = {"claude": claude, "openai": openai, "window": WINDOW, "day": day(claude, openai)}
    if BEFORE is not None:
        figure["before"] = BEFORE
    return ({RUNTIME: figure},)  # one runtime's entry (bench/results.py): the .mpy bundle's


def main():
    from host_sim.fake_anthropic import FakeAnthropic

    from bench.setup import build_bundle, claim_work

    claim_work()
    build_bundle()
    fake = FakeAnthropic(api_key=API_KEY)
    fake.start()
    try:
        (figure,) = measure(fake, lambda line: print(line, flush=True))
    finally:
        fake.stop()
    print(json.dumps(figure[RUNTIME]))


if __name__ == "__main__":
    main()
