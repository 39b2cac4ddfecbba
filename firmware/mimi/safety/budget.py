# Budgets and rate limits: messages per user a minute, model calls an hour, tokens a day (owner warned). A model
# profile that costs nothing (llm/profiles.py: a LAN server unless priced) never spends the daily budget.
import asyncio

from mimi.platform import const, log
from mimi.safety import DEMO_MODEL, NS, usage_store
from mimi.safety.usage_store import UsageStore
from mimi.storage import files
from mimi.bus.message import CLI, SYSTEM

USERS_MAX = const(16)  # senders whose last minute is remembered; the longest quiet is forgotten first
_WARN_PERCENT = const(80)
_MINUTE_S = const(60)
_HOUR_MINUTES = const(60)
_DAY_S = const(86400)
EXEMPT_CHANNELS = (CLI, SYSTEM)  # the owner at the keyboard; cron, heartbeat and watchers (own caps)
_TOLD_WARN = "warned"  # the store's marks: the day limit the 80% / 100% notice was sent for
_TOLD_STOP = "stopped"
# The console commands (channels/commands.py add_lines).
_COMMANDS = (
    "\nusage\tusage\t0\t0\ttokens and estimated cost per model today and this month\tapp.budget.usage"
    "\nbudget\tbudget [tokens]\t0\t1\tshow the daily token budget, or set it (0 = no limit), e.g. budget 3000000"
    "\tapp.budget.set_budget"
    "\n"
)


def user_key(message):
    """Who a message counts against for the per-minute limit, or None when it is exempt."""
    if message.channel in EXEMPT_CHANNELS:
        return None
    meta = message.meta
    user = meta.get("user_id")  # Telegram: the sender; a gateway client: its chat
    return "{}:{}".format(message.channel, user if user is not None else message.chat_id)


class Budget:
    """Agent gate: admit() refuses a turn, check_call() a model call, spent() counts what a call used."""

    def __init__(self, config, store, tell=print, clock=None, spawn=None):
        self.config = config
        self.free_answers = None  # (job) -> True when a free profile answers once the budget is spent (wiring)
        self.store = store
        self.tell = tell  # how the owner hears of 80% and 100%
        self.clock = clock or store.clock  # Unix seconds
        self.spawn = spawn  # asyncio.create_task, for the delayed write; None: only written on the next call
        self.senders = {}  # user key -> admitted times (s) within the last minute
        self.minutes = [0] * _HOUR_MINUTES  # Claude calls per minute, a ring over the last hour
        self.minute = None  # the absolute minute (Unix s // 60) of the ring's newest slot
        self.flushing = None

    def setting(self, key):
        return self.config.get(NS, key)

    # -- the agent's gate --
    async def admit(self, message):
        refusal = self._global_refusal()
        if refusal:
            return refusal
        return self._admit_user(message, self.clock())

    def check_call(self, message, job=None):
        refusal = self._global_refusal(job)
        if refusal:
            return refusal
        self.minutes[self._slot(self.clock())] += 1
        return None

    def spent(self, message, result):
        meta = message.meta
        model = getattr(result, "model", None) or meta.get("model") or self.config.get("llm_config", "model")
        profile = getattr(result, "profile", "claude")
        key = model if profile == "claude" else "{} {}".format(profile, model)  # claude's keys as ever: its model
        usage = getattr(result, "usage", None)
        if getattr(result, "estimated", False):  # no usage from the server: counted from the characters, said so
            usage = dict(usage, estimated_replies=1)
        rolled = self.store.roll()
        self.store.add(key, usage)
        if self._check_thresholds() or rolled:
            self.store.save()
        else:
            self.save_soon()

    def searches_left(self):
        """False once today's server web searches (safety_config.day_searches) are used: requests then
        offer Claude no web search until midnight UTC."""
        cap = self.setting("day_searches")
        return cap <= 0 or usage_store.searches(self.store.today) < cap

    # -- the daily token budget --
    def limit(self):
        return self.setting("day_tokens")

    def over(self):
        """The daily budget is used up (the model chain then skips the profiles that cost money)."""
        limit = self.limit()
        return limit > 0 and self.used_today() >= limit

    def used_today(self):
        """Today's tokens the budget counts: every profile's but those that cost nothing (make sim's offline demo
        among them)."""
        return self.store.used_today(self._free)

    def _free(self, key):
        if " " not in key:  # claude's: a model name
            return key == DEMO_MODEL
        from mimi.llm import profiles

        profile = profiles.find(self.config, key.split(" ", 1)[0])
        return profile is not None and profile.free

    def _check_thresholds(self):
        """Tell the owner when today's use crosses 80% or 100% of the limit, once per limit each; True when
        a notice went out."""
        limit, used = self.limit(), self.used_today()
        if limit <= 0 or used * 100 < limit * _WARN_PERCENT:
            return False
        marks = self.store.marks
        if used >= limit and marks.get(_TOLD_STOP) != limit:
            marks[_TOLD_STOP] = marks[_TOLD_WARN] = limit
            from mimi.safety.budget_texts import used_up  # loaded once 80% of the budget is used

            self.tell(used_up(used, limit))
            return True
        if marks.get(_TOLD_WARN) != limit:
            marks[_TOLD_WARN] = limit
            from mimi.safety.budget_texts import nearly_used

            self.tell(nearly_used(used, limit))
            return True
        return False

    def _global_refusal(self, job=None):
        if self.store.roll():
            self.store.save()
        if self.over() and not (self.free_answers and self.free_answers(job)):
            if self._check_thresholds():  # the limit was lowered below today's use: the owner hears it too
                self.store.save()
            from mimi.safety.budget_texts import stop_text

            now = self.clock()
            until_midnight = _DAY_S - now % _DAY_S if usage_store.clock_date(now) is not None else None
            return stop_text(self.used_today(), self.limit(), until_midnight)
        cap = self.setting("llm_per_hour")
        if self.calls_this_hour() >= cap:
            from mimi.safety.budget_texts import hour_refusal

            return hour_refusal(cap, self._hour_frees_in())
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

    def _hour_frees_in(self):
        """Seconds until the oldest counted call leaves the hour."""
        now = self.clock()
        for age in range(_HOUR_MINUTES - 1, -1, -1):
            if self.minutes[(self.minute - age) % _HOUR_MINUTES]:
                return (self.minute - age + _HOUR_MINUTES) * _MINUTE_S - now
        return 0

    # -- messages per user per minute --
    def _admit_user(self, message, now):
        key = user_key(message)
        if key is None:
            return None
        cap = self.setting("user_per_min")
        times = [t for t in self.senders.get(key, ()) if 0 <= now - t < _MINUTE_S]
        if len(times) >= cap:
            self.senders[key] = times
            from mimi.safety.budget_texts import user_refusal

            return user_refusal(cap, times[0] + _MINUTE_S - now)
        if key not in self.senders and len(self.senders) >= USERS_MAX:
            self._forget_quietest()
        times.append(now)
        self.senders[key] = times
        return None

    def _forget_quietest(self):
        """Drop the sender quiet for the longest."""
        quietest = None
        for key, times in self.senders.items():
            last = times[-1] if times else -1
            if quietest is None or last < quietest[1]:
                quietest = (key, last)
        del self.senders[quietest[0]]

    # -- writing the counts, at most once a minute --
    def save_soon(self):
        """Write the counts now if the last write is a minute old, else once it is (voice/usage.py too)."""
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


    # -- the console commands (their text: usage_report.py, imported when one is typed) --
    async def usage(self):
        """`usage`: tokens and estimated cost per model today and this month, then the limits."""
        from mimi.safety import usage_report

        store = self.store
        store.roll()
        day = store.day or "clock not set"
        usage_report.say(usage_report.report(store.today, "today ({} UTC):".format(day), store.cost))
        usage_report.say(usage_report.report(store.month, "this month ({}):".format(day[:7] if store.day else day),
                                             store.cost))
        for counts, title in ((store.voice_today, "today"), (store.voice_month, "this month")):
            usage_report.say(usage_report.voice_lines(counts, title, lambda key: self.config.get("voice_config", key)))
        await self.set_budget()

    async def set_budget(self, tokens=None):
        """`budget [tokens]`: set the daily token budget (0: no limit), then show the limits."""
        from mimi.safety import usage_report

        if tokens is not None:
            self.config.set(NS, "day_tokens", tokens)
            usage_report.say(["daily token budget set to {} tokens (saved; in effect now)".format(self.limit())])
        usage_report.say(usage_report.limit_lines(self.store, self.limit(), self.calls_this_hour(), self.setting,
                                                  self.clock(), self.used_today()))


def _key_cost(config, key, counts):
    """A usage key's cost: claude's model at its list price, or a profile's price (llm/profiles.py, loaded then)."""
    if " " not in key and not config.get("llm_config", "price"):
        from mimi.safety.prices import cost_micro_usd

        return cost_micro_usd(key, counts)
    from mimi.llm.profiles import key_cost

    return key_cost(config, key, counts)


def setup(app):
    """Create the budget gate in front of every agent turn and add `usage` and `budget` to the console."""
    # A power cut loses at most the last minute's counts: they are written a minute after a change.
    store = UsageStore(files.join(app.flash.root, usage_store.FILE_NAME))
    warning = store.load()
    if warning:
        log("budget: " + warning)
    if warning or store.dirty:
        store.save()
    config = app.config
    store.cost = lambda key, counts: _key_cost(config, key, counts)  # a profile's own price (llm_price)
    budget = Budget(config, store, app.owner.tell, spawn=asyncio.create_task)
    app.agent.gates.append(budget)
    app.console.commands.add_lines(_COMMANDS)  # app.budget: this budget (App)
    return budget
