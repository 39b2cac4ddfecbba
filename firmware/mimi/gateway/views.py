# The web app's views other than the chat: status, settings, memory, rules and watchers, usage (imported at
# the first such frame; gateway/clients.py). Changes run the console's own commands, so the page gets the
# console's checks and messages; secrets stay write-only (config.shown() masks them as config_show does).
import asyncio
import json

from mimi import heap, platform, settings
from mimi.gateway import TOKEN_KEY, TOKEN_NS
from mimi.platform import const, log

_FILE_SHOWN_MAX = const(16 * 1024)  # bytes of a memory file or skill sent to the page
_AUDIT_SHOWN = const(50)  # newest audit entries in the usage view
_AUDIT_TEXT_MAX = const(160)  # characters of an entry's input and result shown in the table
_DAYS_SHOWN = const(30)
_NAME_MAX = const(64)
_OFF_REFUSED = "changes from the page need a gateway token: set one on the console (set_ws_token <token>)"
_TOKEN_KEPT = "the gateway token is not cleared from the page (this page would be locked out): set_ws_token " \
    "on the console makes a new one"
_SETTING_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"
_NO_SETTING = "error: no such setting (a setting's name is namespace.key, of a-z, 0-9 and _: config_show lists them)"
_lock = None  # one console command at a time: its output is taken while it runs


async def answer(app, kind, frame):
    """The frame (JSON text) that answers a view's frame, in a view's scope (what it loads to answer, the Settings
    view's descriptions, is let go after: mimi/heap.py); ValueError says what the frame lacks."""
    with heap.scope("view"):
        return await _answer(app, kind, frame)


async def _answer(app, kind, frame):
    if kind == "status":
        return await _status(app)
    if kind == "settings":
        return _settings(app)
    if kind == "usage":
        return _usage(app)
    if kind == "files":
        return _files(app)
    if kind == "file":
        return _file(app, frame.get("name"))
    if kind == "watchers":
        return _watchers(app)
    if app.config.get(TOKEN_NS, TOKEN_KEY) == "off":  # anyone on the network may chat, but not change things
        return _done(kind, False, _OFF_REFUSED)
    if kind == "set":
        name, value = _word(frame.get("name"), "name"), frame.get("value")
        if not isinstance(value, str) or "\n" in value or "\r" in value:
            raise ValueError("value must be one line of text")
        if not _known(app, name):  # a tab in it would make the console's words name another setting
            return _done(kind, False, _NO_SETTING, name)
        if not value.strip():  # Reset: the default applies again (config_set takes no empty value)
            return _reset(app, name)
        log("gateway: the page changes {}".format(name))
        return _done(kind, None, await run_command(app, "config_set {} {}".format(name, value)), name)
    if kind == "save":
        return _save(app, frame.get("name"), frame.get("content"))
    action = frame.get("action")
    if action not in ("pause", "resume", "remove", "check"):
        raise ValueError('action must be "pause", "resume", "remove" or "check"')
    line = "watch_{} {}".format(action, _word(frame.get("name"), "name"))
    return _done(kind, None, await run_command(app, line, True), frame.get("name"))


def _word(value, what):
    if not isinstance(value, str) or not 0 < len(value) <= _NAME_MAX or " " in value or '"' in value:
        raise ValueError("{} must be 1 to {} characters without spaces".format(what, _NAME_MAX))
    return value


def _known(app, name):
    """Is `name` exactly one setting's namespace.key (nothing but a-z, 0-9 and _ around its dot)?"""
    ns, dot, key = name.partition(".")
    for ch in ns + key:
        if ch not in _SETTING_CHARS:
            return False
    try:
        app.config.is_set(ns, key)
    except KeyError:
        return False
    return bool(dot)


def _done(kind, ok, text, name=None):
    if ok is None:  # the console's words say how it went
        ok = not text.startswith(("error", "usage", "unknown"))
    return json.dumps({"type": kind, "ok": ok, "text": text, "name": name})


async def run_command(app, line, echo=False):
    """What the console command `line` prints, as the console runs it; echo: the console shows it too."""
    global _lock
    if _lock is None:
        _lock = asyncio.Lock()
    async with _lock:
        out, write = [], platform.console_write

        def take(text):
            out.append(text)
            if echo:
                write(text)

        platform.console_write = take
        try:
            await app.console.commands.execute(line)
        finally:
            platform.console_write = write
    return "".join(out).strip("\n")


async def _status(app):
    text = await run_command(app, "status")
    free, used = platform.heap_info()
    samples = app.health.heap_samples()
    return json.dumps({"type": "status", "lines": text.split("\n"), "heap_free": free, "heap_used": used,
                       "heap": samples})


def _settings(app):
    cfg = app.config
    shown = cfg.shown()  # secrets masked as config_show masks them
    rows, at = [], 0
    for setting in settings.SETTINGS:
        ns, key, kind, flags, description = setting[0], setting[1], setting[2], setting[4], setting[7]
        rows.append([ns, key, shown[at][2], 1 if flags & settings.SECRET else 0, kind, description, str(setting[3]),
                     1 if cfg.is_set(ns, key) and _clearable(ns, key) else 0])
        at += 1
    return json.dumps({"type": "settings", "settings": rows})


def _clearable(ns, key):
    return ns != TOKEN_NS or key != TOKEN_KEY


def _reset(app, name):
    """The setting `name` back to its default, answered in the console's words for a change."""
    ns, _, key = name.partition(".")
    if not _clearable(ns, key):
        return _done("set", False, _TOKEN_KEPT, name)
    dropped = app.config.unset(ns, key)  # True: the URL's key went with it (another host)
    log("gateway: the page resets {}".format(name))
    now = [row[2] for row in app.config.shown() if row[0] == ns and row[1] == key]
    return _done("set", True, "{} = {} (the default; saved, in effect now){}".format(
        name, now[0], "; " + settings.KEY_DROPPED if dropped else ""), name)


# -- memory: SOUL.md, USER.md, MEMORY.md, the daily notes; the skills (read-only) --
def _places(app):
    """[(name shown, path, most bytes or 0 for read-only)] of the files the memory view offers."""
    from mimi.agent import skills
    from mimi.storage.memory import DAILY_MAX_BYTES, MEMORY_MAX_BYTES
    from mimi.tools.files import WRITE_MAX

    flash = app.flash
    found = [("SOUL.md", flash.soul_path, WRITE_MAX), ("USER.md", flash.user_path, WRITE_MAX),
             ("MEMORY.md", flash.memory_path, MEMORY_MAX_BYTES)]
    for date in app.memory.daily_dates():
        found.append(("daily/" + date + ".md", flash.daily_path(date), DAILY_MAX_BYTES))
    try:
        for name in skills.names(flash):
            found.append(("skills/" + name, skills.path_of(flash, name), 0))
    except OSError:  # no skills folder
        pass
    return found


def _place(app, name):
    for place in _places(app):
        if place[0] == name:
            return place
    raise ValueError("no file {} (the files frame lists them)".format(str(name)[:_NAME_MAX]))


def _files(app):
    from mimi.storage import files

    rows = [[name, max(files.size(path), 0), limit] for name, path, limit in _places(app)]
    return json.dumps({"type": "files", "files": rows})


def _file(app, name):
    from mimi.storage import files

    name, path, limit = _place(app, name)
    text = files.read_text(path, _FILE_SHOWN_MAX) or ""
    return json.dumps({"type": "file", "name": name, "content": text, "max_bytes": limit})


def _save(app, name, content):
    from mimi.storage import files

    if not isinstance(content, str):
        raise ValueError("content must be text")
    name, path, limit = _place(app, name)
    if not limit:
        return _done("save", False, "{} is read-only here".format(name), name)
    data = content.encode()
    if len(data) > limit:
        return _done("save", False, "{} would be {} bytes; the limit is {} bytes".format(name, len(data), limit),
                     name)
    try:
        files.write_atomic(path, data)
    except OSError as exc:
        return _done("save", False, "could not save {} ({})".format(name, exc), name)
    log("gateway: the page saved {} ({} bytes)".format(name, len(data)))
    return _done("save", True, "saved {} ({} bytes)".format(name, len(data)), name)


# -- rules and watchers --
def _watchers(app):
    from mimi.watch.store import describe

    rows = []
    service = app.watchers  # None on a board that never had a watcher: the page says "No watchers yet"
    for watcher in service.watchers() if service is not None else ():
        last = watcher["history"][-1] if watcher["history"] else None
        row = {"name": watcher["name"], "line": describe(watcher), "paused": bool(watcher.get("paused")),
               "reading": last["reading"] if last else None, "verdict": last["verdict"] if last else None}
        if "rule" in watcher:
            from mimi.watch import rule_schema

            row["rule"] = rule_schema.describe(watcher["rule"])
        rows.append(row)
    return json.dumps({"type": "watchers", "watchers": rows})


# -- usage: tokens and estimated cost a day, the budget, the newest audit entries --
def _demo_answers(app):
    """make sim's offline demo answers a chat: it is claude's model, and claude is the chain's first profile."""
    from mimi.llm import profiles
    from mimi.safety import DEMO_MODEL

    config = app.config
    return config.get("llm_config", "model") == DEMO_MODEL and (
        app.models.plain() or profiles.chain(config)[0].name == profiles.CLAUDE)


def _usage(app):
    from mimi.safety import audit, audit_read, usage_report
    from mimi.safety.prices import DEMO_MODEL
    from mimi.safety.usage_store import TOKEN_FIELDS

    store = app.budget.store
    store.roll()
    days = usage_report.history(store, _DAYS_SHOWN)
    demo = store.today.get(DEMO_MODEL)  # make sim's stand-in brain: its tokens counted, never billed
    secrets = app.audit.secrets()
    entries = []
    for entry in audit_read.tail(app.audit, _AUDIT_SHOWN):
        entries.append([entry.get("ts"), "{}:{}".format(entry.get("channel"), entry.get("chat")),
                        entry.get("tool"), bool(entry.get("ok")), entry.get("ms"),
                        json.dumps(audit.masked(entry.get("input"), secrets))[:_AUDIT_TEXT_MAX],
                        audit.hide(str(entry.get("result")), secrets)[:_AUDIT_TEXT_MAX]])
    entries.reverse()  # newest first
    return json.dumps({"type": "usage", "days": days, "day_tokens": app.budget.limit(), "audit": entries,
                       "demo": sum(demo[:TOKEN_FIELDS]) if demo else 0,
                       "demo_answers": _demo_answers(app)})
