# The console's own commands beside chat and the setters (channels/commands.py names them in its lines): loaded
# when one is typed and let go after it, so a board at rest holds none of their code.
from mimi import VERSION, platform
from mimi.platform import const


_SHOWN_MAX = const(90)  # characters of a tool's description tool_list shows


def _out(app, text):
    app.console.commands.out(text)  # the console's, or the web app's when it runs a command (gateway/views.py)


async def config_set(app, name, value):
    ns, _, key = name.partition(".")
    await app.console.commands.setter(ns, key)(value)


async def tool_list(app):
    registry = app.registry
    for name in sorted(registry.tools):  # the definitions' order
        _out(app, "  {}  {}".format(name, _words(registry.tools[name].description.split("\n")[0], _SHOWN_MAX)))
    if not registry.tools:
        _out(app, "(no tools loaded)")
    for warning in registry.warnings:
        _out(app, "  warning: " + warning)


def _words(text, most):
    """text cut to at most `most` characters at a word's end, an ellipsis saying so."""
    if len(text) <= most:
        return text
    cut = text[: most - 1].rsplit(" ", 1)[0].rstrip(" ,;:(")
    return cut + "\u2026"


async def tool_exec(app, name, text="{}"):
    from mimi import jsontext

    try:
        data = jsontext.loads(text)
    except ValueError:
        _out(app, 'error: the input must be JSON, e.g. tool_exec {} {{"key": "value"}}'.format(name))
        return
    from mimi.tools import turn

    result, is_error = await app.registry.execute(name, data, turn.console())  # the owner, by hand
    _out(app, ("error: " if is_error else "") + result)


async def config_reset(app):
    app.config.reset()
    _out(app, "every setting erased; defaults in effect")


async def memory_read(app):
    text = app.memory.read()
    _out(app, text if text else "(MEMORY.md is empty)")


async def memory_write(app, text):
    app.memory.write(text + "\n")
    _out(app, "MEMORY.md replaced ({} bytes)".format(len(text.encode()) + 1))


async def session_list(app):
    rows = app.sessions.list()
    if not rows:
        _out(app, "(no sessions)")
    for row in rows:
        lines = "" if row[2] is None else ", {} lines".format(row[2])
        _out(app, "  {}  ({} bytes{})".format(row[0], row[1], lines))


async def session_clear(app, chat_id):
    removed = app.sessions.clear(chat_id)
    _out(app, "cleared {} session file(s) for '{}'".format(removed, chat_id))


async def heap_info(app):
    platform.collect()  # figures after a collection: what is really held
    free, used = platform.heap_info()
    if free is None:
        _out(app, "heap: not measured on this runtime")
    else:
        _out(app, "heap: {} bytes free, {} used, {} total".format(free, used, free + used))


async def restart(app):
    _out(app, "restarting...")
    platform.reset()


def _first_profile(config):
    """The name of the profile a chat asks first."""
    from mimi.llm import profiles

    return profiles.chain(config)[0].name


async def status(app):
    cfg = app.config
    up = (platform.ticks_diff(platform.ticks_ms(), app.started_ms)) // 1000
    _out(app, "MimiClaw-Py {}  up {} s".format(VERSION, up))
    from mimi.net.wifi_console import summary

    _out(app, "  WiFi: {}".format(summary(app.wifi)))
    model = cfg.get("llm_config", "model")
    from mimi.safety import DEMO_MODEL

    first = "claude" if app.models.plain() else _first_profile(cfg)
    if model == DEMO_MODEL:
        _out(app, "  Claude: the offline demo brain (make sim without ANTHROPIC_API_KEY; every reply is labelled, "
             "nothing is billed){}".format("; it answers" if first == "claude" else
                                          "; profile {} answers first (the chain below)".format(first)))
    else:
        _out(app, "  Claude: model {} at {}, key {}".format(model, cfg.get("llm_config", "api_base"),
             "set" if cfg.is_set("llm_config", "api_key") else "MISSING (set_api_key <key>)"))
    if not app.models.plain():
        from mimi.llm import commands as llm

        _out(app, "  Models: chain {}{}".format(llm.chain_text(cfg), "; last answer " + llm.answered_text(
            app.models.answered) if app.models.answered else ""))
    _out(app, "  Telegram: token {}".format(
        "set" if cfg.is_set("tg_config", "bot_token") else "not set (set_tg_token <token>)"))
    from mimi.discord import commands as discord_commands
    from mimi.matrix import commands as matrix_commands

    _out(app, "  Matrix: " + matrix_commands.line(app))
    _out(app, "  Discord: " + discord_commands.line(app))
    agent = app.agent
    _out(app, "  Agent: {} turns, {} failed, {}".format(
        agent.turns, agent.failures, "busy" if agent.busy_with else "idle"))
    _out(app, "  Queues: inbound {}/{}, outbound {}/{}".format(
        app.bus.inbound.qsize(), app.bus.inbound.maxsize, app.bus.outbound.qsize(), app.bus.outbound.maxsize))
    free, used = platform.heap_info()
    if free is not None:
        _out(app, "  Heap: {} free, {} used".format(free, used))
    from mimi import board

    _out(app, "  Board: {}".format(board.describe()))
