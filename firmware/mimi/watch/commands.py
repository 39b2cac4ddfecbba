# Console commands for watchers: watch_add, watch_list, watch_pause/resume, watch_remove, watch_check, set_watch_model.
from mimi import platform
from mimi.channels.system import CONSOLE_TARGET
from mimi.safety.roles import OWNER
from mimi.watch import sources
from mimi.watch.store import describe

_app = [None]


def setup(app):
    _app[0] = app
    add = app.console.commands.add
    # -1: the instruction is the rest of the line as typed; name, source and interval may be quoted.
    add("watch_add", _add, "watch_add <name> <source> <interval_s> <instruction...>", 4, -1,
        "watch a source and let the agent judge each reading (" + sources.HELP + ")")
    add("watch_list", _list, "watch_list", 0, 0, "the watchers, their sources and last verdicts")
    add("watch_pause", _pause, "watch_pause <name>", 1, 1, "stop a watcher's ticks (kept; watch_resume)")
    add("watch_resume", _resume, "watch_resume <name>", 1, 1, "start a paused watcher again")
    add("watch_remove", _remove, "watch_remove <name>", 1, 1, "delete a watcher")
    add("watch_check", _check, "watch_check <name>", 1, 1, "read a watcher's source and judge it now")
    add("set_watch_model", _set_model, "set_watch_model [model_id]", 0, 1,
        "the model that judges readings (none: the main model)")


def _say(text):
    platform.console_write(text + "\n")


def _service():
    from mimi import watch

    return watch.watchers(_app[0])


async def _add(name, source, interval, *words):
    instruction = " ".join(words)
    if not interval.isdigit():
        _say("error: the interval is a number of seconds, like 60")
        return
    try:
        watcher = _service().add(name, source, int(interval), instruction, CONSOLE_TARGET, OWNER)
    except ValueError as exc:  # WatchError, SourceError
        _say("error: {}".format(exc))
        return
    _say("watching: " + describe(watcher))


async def _list():
    watchers = _service().watchers()
    if not watchers:
        _say("no watchers (add one with watch_add, or ask the agent)")
    for watcher in watchers:
        _say("  " + describe(watcher))
        if watcher["history"]:
            last = watcher["history"][-1]
            _say("      last: {} -> {}".format(last["reading"], last["verdict"]))
    model = _app[0].config.get("llm_config", "watch_model")
    _say("judged by {}".format(model or "the main model"))


async def _pause(name):
    await _set_paused(name, True)


async def _resume(name):
    await _set_paused(name, False)


async def _set_paused(name, paused):
    try:
        watcher = _service().pause(name, paused)
    except ValueError as exc:
        _say("error: {}".format(exc))
        return
    _say("{} watcher {}".format("paused" if paused else "resumed", watcher["name"]))


async def _remove(name):
    try:
        watcher = _service().remove(name)
    except ValueError as exc:
        _say("error: {}".format(exc))
        return
    _say("removed watcher {}".format(watcher["name"]))


async def _check(name):
    service = _service()
    try:
        watcher = service.store.get(name)
    except ValueError as exc:
        _say("error: {}".format(exc))
        return
    outcome = await service.tick(watcher)
    shown = {"queued": "reading sent to the agent; a message comes only if something needs saying",
             "unreadable": "the source could not be read (see above)",
             "capped": "not judged: the evaluations-per-minute cap is reached",
             "busy": "its previous reading is still being judged"}
    _say("watch {}: {}".format(name, shown.get(outcome, outcome)))


async def _set_model(model=""):
    config = _app[0].config
    model = model.strip()
    if model:
        config.set("llm_config", "watch_model", model)
        _say("watchers are judged by {}".format(model))
    else:
        config.unset("llm_config", "watch_model")
        _say("watchers are judged by the main model ({})".format(config.get("llm_config", "model")))
