# Audit log: one JSONL line per tool call in <data>/audit/YYYY-MM-DD.jsonl, secrets masked, bounded.
import json

from mimi import settings
from mimi import platform
from mimi.platform import const
from mimi.storage import files

FOLDER = "audit"
SUFFIX = ".jsonl"
AUDIT_DAYS = const(14)  # day files kept; the oldest are removed
FILE_MAX = const(262144)  # bytes of one day's file; later calls that day are not logged
INPUT_MAX = const(400)  # characters of a tool input's JSON kept; a longer one is cut to text
RESULT_MAX = const(200)  # characters of a tool result kept
_DEPTH_MAX = const(8)
SECRET_WORDS = ("key", "token", "password", "passwd", "secret", "auth")
# The console command (channels/commands.py add_lines), its code (audit_read.py) imported when it is typed.
_COMMANDS = (
    "\naudit_tail\taudit_tail [n]\t0\t1\tshow the newest n tool calls from the audit log (default 10)"
    "\tmimi.safety.audit_read:audit_tail(app.audit)"
    "\n"
)


def _secret_name(name):
    name = str(name).lower()
    for word in SECRET_WORDS:
        if word in name:
            return True
    return False


def hide(text, secrets, limit=None):
    """text with every secret masked, then cut to limit (safety/masking.py: loaded at the first tool call, so a
    board that runs none never holds it); the log's readers (audit_read, the usage view) mask with it too."""
    from mimi.safety import masking

    return masking.outside(text, secrets, limit)


def masked(value, secrets=(), depth=0):
    """A copy of value whose secret-named keys and configured secrets are masked."""
    if depth > _DEPTH_MAX:
        return "(too deep)"
    if isinstance(value, dict):
        out = {}
        for key in value:
            item = value[key]
            if _secret_name(key) and isinstance(item, (dict, list, tuple)):
                out[key] = settings.mask("*")  # a container of secrets: hide all of it
            elif _secret_name(key) and item is not None and not isinstance(item, bool):
                out[key] = settings.mask(item)
            else:
                out[key] = masked(item, secrets, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [masked(item, secrets, depth + 1) for item in value]
    if isinstance(value, str):
        return hide(value, secrets)
    return value


class Audit:
    """Registry guard that logs each call after it ran; a full or broken flash never fails the call."""

    def __init__(self, root, secrets=lambda: (), clock=None):
        self.folder = files.join(root, FOLDER)
        self.secrets = secrets  # () -> the configured secret values to hide
        self.clock = clock or platform.unix_time
        self.full_day = None  # the day whose file reached FILE_MAX, reported once

    def before(self, name, data, tool, turn):
        return None

    def after(self, name, data, text, is_error, took_ms, turn):
        secrets = [s for s in self.secrets() if s]
        shown = masked(data, secrets)
        body = json.dumps(shown)
        entry = {
            "ts": self.clock(),
            "channel": turn.channel,
            "chat": turn.chat_id,
            "user": turn.meta.get("user_id"),
            "tool": name,
            "input": shown if len(body) <= INPUT_MAX else body[:INPUT_MAX] + "\u2026",
            "ok": not is_error,
            "ms": took_ms,
            "result": hide(text, secrets, RESULT_MAX),  # masked, then cut: never half a secret
        }
        if turn.profile is not None:  # the model profile that asked for the call
            entry["profile"] = turn.profile
        try:
            self._append(json.dumps(entry))
        except OSError as exc:  # a full flash must not cost the user the tool call
            platform.log("audit: could not log {} ({})".format(name, exc))

    def _append(self, line):
        day = platform.utc_date(self.clock())
        path = files.join(self.folder, day + SUFFIX)
        now = files.size(path)
        if now < 0:
            files.makedirs(self.folder)
            self._prune(keep=AUDIT_DAYS - 1)
        elif now + len(line) + 1 > FILE_MAX:
            if self.full_day != day:
                self.full_day = day
                platform.log("audit: today's log reached {} bytes; further calls today are not logged".format(FILE_MAX))
            return
        files.append_line(path, line)

    def day_files(self):
        """Names of the day files, oldest first."""
        return [n for n in files.listdir(self.folder) if n.endswith(SUFFIX)]

    def _prune(self, keep):
        names = self.day_files()
        for name in names[: max(0, len(names) - keep)]:
            files.remove(files.join(self.folder, name))


def configured_secrets(config):
    """The values of every secret setting that is set (safety/masking.py)."""
    from mimi.safety import masking

    return masking.secrets(config)


def _secrets_of(app):
    from mimi.safety import masking

    return masking.of_app(app)  # the MCP servers' tokens too


def setup(app):
    """Create the audit log, put it behind every tool call and add `audit_tail [n]` to the console
    (audit_read.py, imported when it is typed)."""
    audit = Audit(app.flash.root, lambda: _secrets_of(app))
    app.registry.guards.append(audit)
    app.console.commands.add_lines(_COMMANDS)  # app.audit: this audit (App)
    return audit
