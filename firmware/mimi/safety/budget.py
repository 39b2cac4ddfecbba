# Budgets and rate limits: messages per user a minute, Claude calls an hour, tokens a day (owner warned).
import asyncio

from mimi.platform import const
from mimi.safety import usage_store
from mimi.safety.usage_store import UsageStore
from mimi.storage import files

NS = "safety_config"
USERS_MAX = const(16)  # senders whose last minute is remembered; the longest quiet is forgotten first
WARN_PERCENT = const(80)
_MINUTE_S = const(60)
_HOUR_MINUTES = const(60)
EXEMPT_CHANNELS = ("cli", "system")  # the owner at the keyboard; cron, heartbeat and watchers (own caps)
RAISE_HINT = "budget <tokens>"
# The console commands (channels/commands.py add_lines), their code (budget_console.py) imported when typed.
_COMMANDS = (
    "\nusage\tusage\t0\t0\ttokens and estimated cost per model today and this month"
    "\tmimi.safety.budget_console:usage(app.budget)"
    "\nbudget\tbudget [tokens]\t0\t1\tshow the daily token budget, or set it (0 = no limit), e.g. budget 3000000"
    "\tmimi.safety.budget_console:set_budget(app.budget)"
    "\n"
)


def user_key(message):
    """Who a message counts against for the per-minute limit, or None when it is exempt."""
    if message.channel in EXEMPT_CHANNELS:
        return None
    meta = message.meta if isinstance(message.meta, dict) else {}
    user = meta.get("user_id")  # Telegram: the sender; a gateway client: its chat
    return "{}:{}".format(message.channel, user if user is not None else message.chat_id)


class Budget:
    """Agent gate: admit() refuses a turn, check_call() a Claude call, spent() counts what a call used."""

    def __init__(self, config, store, tell=print, clock=None, spawn=None):
        self.config = config
        self.store = store
        self.tell = tell  # how the owner hears of 80% and 100%
        self.clock = clock or store.clock  # Unix seconds
        self.spawn = spawn  # asyncio.create_task, for the delayed write; None: only written on the next call
        self.senders = {}  # user key -> admitted times (s) within the last minute
        self.minutes = [0] * _HOUR_MINUTES  # Claude calls per minute, a ring over the last hour
        self.minute = None  # the absolute minute (Unix s // 60) of the ring's newest slot
        self.flushing = None

    def _get(self, key):
        return self.config.get(NS, key)

    # -- the agent's gate --
    async def admit(self, message):
        refusal = self._global_refusal()
        if refusal:
            return refusal
        return self._admit_user(message, self.clock())

    def check_call(self, message):
        refusal = self._global_refusal()
        if refusal:
            return refusal
        self.minutes[self._slot(self.clock())] += 1
        return None

    def spent(self, message, result):
        meta = message.meta if isinstance(message.meta, dict) else {}
        model = getattr(result, "model", None) or meta.get("model") or self.config.get("llm_config", "model")
        rolled = self.store.roll()
        self.store.add(model, getattr(result, "usage", None))
        if self._check_thresholds() or rolled:
            self.store.save()
        else:
            self._save_soon()

    def searches_left(self):
        """False once today's server web searches (safety_config.day_searches) are used: requests then
        offer Claude no web search until midnight UTC."""
        cap = self._get("day_searches")
        return cap <= 0 or usage_store.searches(self.store.today) < cap

    # -- the daily token budget --
    def limit(self):
        return self._get("day_tokens")

    def _over(self):
        limit = self.limit()
        return limit > 0 and self.store.used_today() >= limit

    def _check_thresholds(self):
        """Tell the owner when today's use crosses 80% or 100% of the limit; True when a notice went out."""
        limit, used = self.limit(), self.store.used_today()
        if limit <= 0 or used * 100 < limit * WARN_PERCENT:
            return False
        from mimi.safety.budget_refusals import tell_owner  # loaded once 80% of the budget is used

        return tell_owner(self, limit, used)

    def _global_refusal(self):
        if self.store.roll():
            self.store.save()
        if self._over():
            if self._check_thresholds():  # the limit was lowered below today's use: the owner hears it too
                self.store.save()
            from mimi.safety.budget_refusals import stop_text

            return stop_text(self)
        cap = self._get("llm_per_hour")
        if self.calls_this_hour() >= cap:
            from mimi.safety.budget_refusals import hour_refusal

            return hour_refusal(self, cap)
        return None

    # -- Claude calls in the last hour: one slot per minute --
    def _slot(self, now):
        minute = now // _MINUTE_S
        if self.minute is None or not 0 <= minute - self.minute < _HOUR_MINUTES:
            self.minutes = [0] * _HOUR_MINUTES  # first call, a long quiet, or the clock was set back
        else:
            for m in range(self.minute + 1, minute + 1):
                self.minutes[m % _HOUR_MINUTES] = 0
        self.minute = minute
        return minute % _HOUR_MINUTES

    def calls_this_hour(self):
        self._slot(self.clock())
        return sum(self.minutes)

    # -- messages per user per minute --
    def _admit_user(self, message, now):
        key = user_key(message)
        if key is None:
            return None
        cap = self._get("user_per_min")
        times = [t for t in self.senders.get(key, ()) if 0 <= now - t < _MINUTE_S]
        if len(times) >= cap:
            self.senders[key] = times
            from mimi.safety.budget_refusals import user_refusal

            return user_refusal(cap, times, now)
        if key not in self.senders and len(self.senders) >= USERS_MAX:
            from mimi.safety.budget_refusals import forget_quietest

            forget_quietest(self.senders)
        times.append(now)
        self.senders[key] = times
        return None

    # -- writing the counts, at most once a minute --
    def _save_soon(self):
        if not self.store.dirty:
            return
        wait = self.store.wait_s()
        if wait == 0:
            self.store.save()
        elif self.spawn is not None and self.flushing is None:
            self.flushing = self.spawn(self._save_after(wait))

    async def _save_after(self, wait):
        try:
            await asyncio.sleep(wait)
        finally:
            self.flushing = None
        if self.store.dirty:
            self.store.save()


def setup(app):
    """Create the budget gate in front of every agent turn and add `usage` and `budget` to the console
    (budget_console.py, imported when one is typed)."""
    # A power cut loses at most the last minute's counts: they are written a minute after a change.
    store = UsageStore(files.join(app.flash.root, usage_store.FILE_NAME))
    warning = store.load()
    if warning:
        print("budget: " + warning)
    if warning or store.dirty:
        store.save()
    budget = Budget(app.config, store, app.owner.tell, spawn=asyncio.create_task)
    app.agent.gates.append(budget)
    app.console.commands.add_lines(_COMMANDS)  # app.budget: this budget (App)
    return budget
