# Shorter watchdog, healthy-boot, Claude and Telegram limits for tests: the host runner's --health option.
from mimi.health.watchdog import Health
from mimi.llm.models import Models
from mimi.telegram.outbox import Outbox
from mimi.telegram.poller import Poller
from mimi.telegram.sender import Sender


def configure(text):
    """'wdt_ms=2000,turn_s=3,healthy_s=5,claude_idle_s=2' sets those limits (class attributes) for this run."""
    names = {"wdt_ms": (Health, "wdt_timeout_ms"), "turn_s": (Health, "turn_limit_s"),
             "healthy_s": (Health, "healthy_after_s"), "claude_first_byte_s": (Models, "first_byte_s"),
             "claude_idle_s": (Models, "idle_s"), "claude_deadline_s": (Models, "deadline_s"),
             "tg_poll_s": (Poller, "poll_s"), "tg_grace_s": (Poller, "grace_s"),
             "tg_patience_s": (Sender, "patience_s"), "tg_outbox_s": (Outbox, "retry_s")}
    for item in text.split(","):
        key, _, value = item.partition("=")
        if key.strip() not in names:
            raise ValueError("unknown health limit '{}' (known: {})".format(key, ", ".join(names)))
        owner, attr = names[key.strip()]
        setattr(owner, attr, int(value))
