# Where a model call goes: claude alone (llm_config, the default: nothing else loaded), or the chain of profiles
# (llm_use; a job's own profile first, llm_for), the next profile asked when one fails before any of the reply
# was shown. Profiles and the OpenAI-compatible client are loaded by a board that uses them.
from mimi.llm.errors import ModelError
from mimi.platform import log

_NOTE = "\n\n\u2014 answered by {} ({})"


class Route:
    """One turn's way through the chain: the profile that answers (its later rounds start there) and the ones
    that could not, with why. shown: some of the turn's text reached the user, so no other profile may answer."""

    def __init__(self, job=None):
        self.job = job
        self.profile = None
        self.skipped = []  # (profile name, why)
        self.shown = False

    def note(self):
        """The reply's last line when a profile other than the first answered, else None."""
        if not self.skipped or self.profile is None:
            return None
        return _NOTE.format(self.profile.name, _skipped(self))


def job_of(meta):
    """The job (llm_for) a turn is for, from its message's extras: a watcher's or the heartbeat's; else None."""
    source = meta.get("source") if isinstance(meta, dict) else None
    return source if source in ("watcher", "heartbeat") else None


class Models:
    """stream() as Claude.stream(), with the route of the turn (its job, and the profile that answered so far).
    The wiring (app.py) sets budget_spent (True once the day's token budget is spent) and tell (the owner's
    notice, once a boot per profile whose key was refused)."""

    def __init__(self, config, claude):
        self.config = config
        self.claude = claude
        self.budget_spent = _never
        self.tell = None
        self.answered = None  # (profile name, model, skipped) of the last call that answered: status
        self._openai = None
        self._told = []

    def plain(self, job=None):
        """True while calls go to claude alone: the chain is the default and the job has no profile of its own."""
        cfg = self.config
        return cfg.get("llm_config", "chain") == "claude" and (job is None or not cfg.get("llm_config", "for_" + job))

    def has_free(self, job=None):
        """A profile that costs nothing may answer once the day's budget is spent (budget_fallback on)."""
        if self.plain(job) or not self.config.get("llm_config", "fallback"):
            return False
        from mimi.llm import profiles

        for profile in profiles.chain(self.config, job):
            if profile.free:
                return True
        return False

    async def stream(self, system, messages, tools=None, on_delta=None, tool_choice=None, model=None,
                     on_tool=None, max_tokens=None, route=None):
        """One reply, from the first profile of the route's chain that can give it (its result's .profile names
        it). tools: a list, or tools(server) giving the list, Claude's own tools included when server is True.
        Raises ModelError (the last profile's, naming why the ones before it could not)."""
        route = route or Route()
        if self.plain(route.job):
            result = await self.claude.stream(system, messages, tools(True) if callable(tools) else tools,
                                              on_delta, tool_choice, model, on_tool, max_tokens)
            result.profile = "claude"
            self.answered = ("claude", result.model or model or self.config.get("llm_config", "model"), ())
            return result
        from mimi.llm import profiles

        chain = profiles.chain(self.config, route.job)
        if route.profile is not None:  # a later round of the turn: from the profile that answered on
            names = [p.name for p in chain]
            if route.profile.name in names:
                chain = chain[names.index(route.profile.name):]
        return await self._along(chain, route, system, messages, tools, on_delta, tool_choice, model, on_tool,
                                 max_tokens)

    async def _along(self, chain, route, system, messages, tools, on_delta, tool_choice, model, on_tool, max_tokens):
        shown = [False]

        async def delta(text):
            shown[0] = True
            await on_delta(text)

        fallback = self.config.get("llm_config", "fallback") and self.budget_spent()
        for i, profile in enumerate(chain):
            last = i == len(chain) - 1
            if fallback and not profile.free:
                route.skipped.append((profile.name, "over today's budget"))
                if last:
                    raise ModelError("budget", "The day's token budget is spent and no free profile could answer.")
                continue
            try:
                result = await self._call(profile, system, messages, tools, delta if on_delta else None, tool_choice,
                                          model, on_tool, max_tokens, not last)
            except ModelError as exc:
                if last or shown[0] or route.shown or not exc.fails_over:
                    if route.skipped:
                        exc.message += " ({})".format(_skipped(route))
                    raise
                why = _why(exc)
                route.skipped.append((profile.name, why))
                log("llm: {} {} ({}); asking {}".format(profile.name, why, exc.message, chain[i + 1].name))
                if exc.key_refused:
                    self._tell_once(profile.name, exc.message)
                continue
            result.profile = profile.name
            route.profile = profile
            self.answered = (profile.name, result.model or profile.model, list(route.skipped))
            if route.skipped:
                log("llm: {} answered ({})".format(profile.name, _skipped(route)))
            return result

    async def _call(self, profile, system, messages, tools, on_delta, tool_choice, model, on_tool, max_tokens,
                    fail_fast):
        own = profile.anthropic_own
        listed = tools(own) if callable(tools) else tools
        if profile.wire == "openai":
            if self._openai is None:
                from mimi.llm.openai_chat import OpenAIChat

                self._openai = OpenAIChat(self.config)
            return await self._openai.stream(profile, system, messages, listed, on_delta, tool_choice, max_tokens,
                                             fail_fast)
        if profile.slot is None:  # claude itself: llm_config's settings, a job's model (set_watch_model) kept
            return await self.claude.stream(system, messages, listed, on_delta, tool_choice, model, on_tool,
                                            max_tokens, None, fail_fast)
        return await self.claude.stream(system, messages, listed, on_delta, tool_choice, None,
                                        on_tool if own else None, max_tokens, profile, fail_fast)

    def _tell_once(self, name, message):
        if name in self._told or self.tell is None:
            return
        self._told.append(name)
        try:
            self.tell("{} The chain's next profile answers meanwhile.".format(message))
        except Exception as exc:  # a notice must never cost the turn
            log("llm: could not tell the owner: {}".format(exc))


def _skipped(route):
    return ", ".join(name + " " + why for name, why in route.skipped)


def _never():
    return False


def _why(exc):
    """What the reply's note says of a profile that could not answer."""
    status = exc.status or 0
    if exc.kind == "no_api_key":
        return "has no key"
    if exc.key_refused:
        return "refused its key"
    if status == 404 or exc.kind == "not_found_error":
        return "has no such model"
    if status == 429 or exc.kind == "rate_limit_error":
        return "rate limited"
    if status == 529 or exc.kind == "overloaded_error":
        return "overloaded"
    if status >= 500 or exc.kind == "api_error":
        return "failed ({})".format(status or "server error")
    return "unreachable"
