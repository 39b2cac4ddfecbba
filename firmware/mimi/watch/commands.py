# Console commands for watchers: watch_add, watch_list, watch_pause/resume, watch_remove, watch_check, set_watch_model.
from mimi import platform
from mimi.channels.system import CONSOLE_TARGET
from mimi.safety.roles import OWNER
from mimi.watch import sources
from mimi.watch.store import describe, is_local, waits_for_rule

# The console commands (channels/commands.py add_lines; builtin_defs.COMMANDS keeps a copy for boot). -1: the
# instruction is the rest of the line as typed; name, source and interval may be quoted.
COMMANDS = (
    "\nwatch_add\twatch_add <name> <source> <interval_s> <instruction...>\t4\t-1\twatch a source and let the "
    "agent judge each reading (" + sources.HELP + ")\tmimi.watch.commands:add(app)"
    "\nwatch_list\twatch_list\t0\t0\tthe watchers, their sources, who judges each and their last verdicts"
    "\tmimi.watch.commands:list_all(app)"
    "\nwatch_pause\twatch_pause <name>\t1\t1\tstop a watcher's ticks (kept; watch_resume)"
    "\tmimi.watch.commands:pause(app)"
    "\nwatch_resume\twatch_resume <name>\t1\t1\tstart a paused watcher again\tmimi.watch.commands:resume(app)"
    "\nwatch_remove\twatch_remove <name>\t1\t1\tdelete a watcher\tmimi.watch.commands:remove(app)"
    "\nwatch_check\twatch_check <name>\t1\t1\tread a watcher's source and judge it now"
    "\tmimi.watch.commands:check(app)"
    "\nset_watch_model\tset_watch_model [model_id]\t0\t1\tthe Claude model that judges readings (none: claude's own)"
    "\tmimi.watch.commands:set_model(app.config)"
    "\nwatch_rule\twatch_rule <name> <json|off>\t2\t-1\tgive a watcher a local rule the board "
    "carries out itself, or take it away (README: Rules)\tmimi.watch.commands:set_rule(app)"
    "\n"
)


_WAITS = "waits for its local rule (the model does not judge it): watch_rule {} <json>"


def _say(text):
    platform.console_write(text + "\n")


def _service(app):
    return app.part("watchers")  # made at the first need


async def add(app, name, source, interval, *words):
    instruction = " ".join(words)
    if not interval.isdigit():
        _say("error: the interval is a number of seconds, like 60")
        return
    try:
        watcher = _service(app).add(name, source, int(interval), instruction, CONSOLE_TARGET, OWNER)
    except ValueError as exc:  # WatchError, SourceError
        _say("error: {}".format(exc))
        return
    _say("watching: " + describe(watcher))
    if waits_for_rule(watcher):
        _say("  it " + _WAITS.format(name))


async def list_all(app):
    watchers = _service(app).watchers()
    if not watchers:
        _say("no watchers (add one with watch_add, or ask the agent)")
    model = None  # who judges the model's watchers, found at the first one
    for watcher in watchers:
        _say("  " + describe(watcher))
        if is_local(watcher):
            _say("      " + judged_by(app.config, watcher))
        else:
            model = model or judged_by(app.config)
            _say("      " + model)
        if watcher["history"]:
            last = watcher["history"][-1]
            _say("      last: {} -> {}".format(last["reading"], last["verdict"]))


def judged_by(config, watcher=None):
    """Who judges a watcher's readings, in words: 'judged by its rule: ...' for a local one; for the model's
    watchers (no watcher given), the profile asked first for them, as the chain asks (llm/profiles.py chain):
    the llm_for watcher profile when set, else the chain's first; claude with set_watch_model's model if set."""
    if watcher is not None and is_local(watcher):
        return "judged by its " + _rule_line(watcher) if "rule" in watcher else _WAITS.format(watcher["name"])
    get = config.get
    own = get("llm_config", "for_watcher")
    name, model, why = "claude", None, "the chain's first"
    if own or get("llm_config", "chain") != "claude":  # profiles in use (else claude alone: none loaded)
        from mimi.llm import profiles

        first = profiles.chain(config, "watcher")[0]
        name, model = first.name, first.model
        why = "llm_for watcher" if first.name == own else why
    if name == "claude":
        watch_model = get("llm_config", "watch_model")
        model = watch_model + ", set_watch_model" if watch_model else get("llm_config", "model")
    return "judged by {} ({}): {}".format(name, model, why)


async def pause(app, name):
    await _set_paused(app, name, True)


async def resume(app, name):
    await _set_paused(app, name, False)


async def _set_paused(app, name, paused):
    try:
        watcher = _service(app).pause(name, paused)
    except ValueError as exc:
        _say("error: {}".format(exc))
        return
    _say("{} watcher {}".format("paused" if paused else "resumed", watcher["name"]))


async def remove(app, name):
    try:
        watcher = _service(app).remove(name)
    except ValueError as exc:
        _say("error: {}".format(exc))
        return
    _say("removed watcher {}".format(watcher["name"]))


def _rule_line(watcher):
    from mimi.watch import rule_schema

    state = watcher["state"]
    fired = "fired {} times".format(state["fired"]) if state["fired"] else "never fired"
    if state["at"]:
        fired += ", last {}".format(platform.utc_stamp(state["at"]))
    return "rule: {}  [{}{}]".format(rule_schema.describe(watcher["rule"]), fired, "; fired, waiting to re-arm"
                                     if state["on"] else "")


async def set_rule(app, name, text):
    from mimi import jsontext

    try:
        rule = None if text.strip() == "off" else jsontext.loads(text)
        watcher = _service(app).set_rule(name, rule)
    except ValueError as exc:  # not JSON, WatchError, RuleError, SourceError
        _say("error: {}".format(exc))
        return
    _say(("rule set: " if "rule" in watcher else "rule removed: ") + describe(watcher))
    if "rule" in watcher:
        _say("  " + _rule_line(watcher))


async def check(app, name):
    service = _service(app)
    try:
        watcher = service.store.get(name)
    except ValueError as exc:
        _say("error: {}".format(exc))
        return
    if "rule" in watcher:  # a dry run: what the rule would do now, nothing run
        _say("watch {}: {}".format(name, await service.dry_run(watcher)))
        return
    outcome = await service.tick(watcher)
    shown = {"queued": "reading sent to the agent; a message comes only if something needs saying",
             "unreadable": "the source could not be read (see above)",
             "capped": "not judged: the evaluations-per-minute cap is reached",
             "busy": "its previous reading is still being judged"}
    _say("watch {}: {}".format(name, shown.get(outcome, outcome)))


async def set_model(config, model=""):
    model = model.strip()
    if model:
        config.set("llm_config", "watch_model", model)
    else:
        config.unset("llm_config", "watch_model")
    _say("watch model {}; the model's watchers are {}".format(model or "unset", judged_by(config)))
