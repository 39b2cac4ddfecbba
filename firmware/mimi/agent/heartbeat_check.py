# One heartbeat check: the open items of HEARTBEAT.md go to the agent, its answer to the owner.
# Loaded by agent/heartbeat.py at the first beat that finds HEARTBEAT.md, or at heartbeat_trigger.
import asyncio

from mimi import platform
from mimi.bus.message import TELEGRAM
from mimi.channels.system import CONSOLE_TARGET, HEARTBEAT_OK, is_heartbeat_ok, system_message
from mimi.platform import const
from mimi.storage import files

FILE_MAX = const(4096)  # bytes of HEARTBEAT.md read; the rest is ignored
_TRIGGER_WAIT_S = const(300)  # heartbeat_trigger waits this long for the outcome
_BUSY_MAX_S = const(600)  # an unanswered heartbeat stops blocking the next one after this

PROMPT = (
    "[heartbeat] A periodic check of your task list HEARTBEAT.md. Open items:\n{}\n\n"
    "If nothing needs doing or telling your owner right now, answer exactly " + HEARTBEAT_OK
    + " and nothing else. Otherwise do what is due and write the message for your owner; "
    "it is sent to them. An item finished for good can be marked [x] in HEARTBEAT.md (edit_file)."
)


def open_items(text):
    """The lines of HEARTBEAT.md that still matter: no blanks, headers, comments or [x] items."""
    items = []
    in_comment = False
    for line in (text or "").split("\n"):
        line = line.strip()
        if in_comment or line.startswith("<!--"):
            in_comment = "-->" not in line
            continue
        if not line or line.startswith("#"):
            continue
        body = line[1:].lstrip() if line[0] in "-*+" else line
        if body.startswith("[x]") or body.startswith("[X]"):
            continue
        items.append(line)
    return items


def owner_target(app):
    """Where a heartbeat answer goes: the first allowlisted Telegram user when Telegram is
    configured (their private chat has the user's id), else the serial console."""
    cfg = app.config
    if "telegram" in app.channels and cfg.is_set("tg_config", "bot_token"):
        from mimi.telegram.allowlist import parse_allowlist

        ids = parse_allowlist(cfg.get("tg_config", "allowlist"))
        if ids:
            return TELEGRAM, str(ids[0])
    return CONSOLE_TARGET


async def beat(heartbeat, on_reply=None):
    """Heartbeat.beat's work: queue one heartbeat turn for `heartbeat` (agent/heartbeat.py) and
    count its outcome there; the same return values."""
    if heartbeat.busy_since is not None:
        if platform.ticks_diff(platform.ticks_ms(), heartbeat.busy_since) < _BUSY_MAX_S * 1000:
            return -1
    items = open_items(files.read_text(heartbeat.path, FILE_MAX))
    if not items:
        return 0
    heartbeat.busy_since = platform.ticks_ms()

    def done(text, kind):
        heartbeat.busy_since = None
        heartbeat.runs += 1
        if kind != "error" and is_heartbeat_ok(text):
            heartbeat.silent += 1
        if on_reply is not None:
            on_reply(text, kind)

    target = owner_target(heartbeat.app)
    # No session: the check must not fill a chat's history with HEARTBEAT_OK every half hour.
    meta = {"source": "heartbeat", "session": None, "quiet_errors": True, "on_reply": done}
    try:
        await heartbeat.app.bus.inbound.put(system_message(target, PROMPT.format("\n".join(items)), meta))
    except BaseException:
        heartbeat.busy_since = None
        raise
    return len(items)


async def trigger(heartbeat):
    """Heartbeat.trigger's work (the heartbeat_trigger command): one heartbeat now, its outcome printed."""
    outcome = []
    finished = asyncio.Event()

    def on_reply(text, kind):
        outcome.append((text, kind))
        finished.set()

    count = await beat(heartbeat, on_reply)
    if count < 0:
        platform.log("heartbeat: the previous one is still being answered")
        return
    if count == 0:
        platform.log("heartbeat: no open items in {} (no LLM call)".format(heartbeat.path))
        return
    target = owner_target(heartbeat.app)
    platform.log("heartbeat: checking {} open item(s)...".format(count))
    try:
        await asyncio.wait_for(finished.wait(), _TRIGGER_WAIT_S)
    except asyncio.TimeoutError:
        platform.log("heartbeat: no answer within {} s".format(_TRIGGER_WAIT_S))
        return
    text, kind = outcome[0]
    if kind == "error":
        platform.log("heartbeat: failed: {}".format(text))
    elif is_heartbeat_ok(text):
        platform.log("heartbeat: nothing due ({}; nothing sent)".format(HEARTBEAT_OK))
    else:
        platform.log("heartbeat: answer sent to {}:{}".format(target[0], target[1]))
