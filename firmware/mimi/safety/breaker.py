# Circuit breaker: the same acting tool call repeated too often in a window is refused until things go quiet.
from mimi import platform

NS = "safety_config"

# Built-in tools that change the world; a user tool says so itself with `acting = True`.
ACTING = ("write_file", "edit_file", "gpio_write", "cron_add", "cron_remove", "send_message", "remember",
          "note_today")


def is_acting(name, tool=None):
    return name in ACTING or bool(getattr(tool, "acting", False))


class Breaker:
    """Registry guard: before() refuses an open call. Only acting tools are counted, by breaker_calls.py,
    imported at the first acting call: a read-only call loads none of it."""

    def __init__(self, config, clock=None, tell=print):
        self.config = config
        self.clock = clock or platform.ticks_ms  # milliseconds, compared with ticks_diff
        self.tell = tell  # how the owner hears that a breaker opened
        self.calls = {}  # key -> [recent start times (ms), last seen (ms), open]

    def before(self, name, data, tool=None):
        """None to let the call go on to the approvers, else the reason it is refused. Nothing is counted
        here: a call the roles or the user refuse never ran, so it cannot open a breaker."""
        if not is_acting(name, tool):
            return None
        from mimi.safety.breaker_calls import check

        return check(self, name, data, False)

    def admit(self, name, data, tool=None):
        """The approvers let the call through: count it (checked again, as identical calls may have
        been approved meanwhile)."""
        if not is_acting(name, tool):
            return None
        from mimi.safety.breaker_calls import check

        return check(self, name, data, True)

    def after(self, name, data, text, is_error, took_ms):
        return None


def setup(app):
    """Create the breaker and put it in front of every tool call the registry runs."""
    breaker = Breaker(app.config, tell=app.owner.tell)
    app.registry.guards.append(breaker)
    return breaker
