# The chain of model profiles a call goes along (llm_use; a job's own profile first, llm_for): the next profile
# answers when one fails before any of the reply was shown; never once text was shown. Loaded by a board whose
# chain is not claude alone (llm/models.py).
from mimi.llm import profiles
from mimi.llm.errors import ModelError
from mimi.platform import const, log, ticks_diff, ticks_ms

_NOTE = "\n\n\u2014 answered by {} ({})"
# Failures after which the next profile may answer: the profile cannot answer now, whatever was asked (a request
# the API refused, 400 or 413, would be refused by the next one too).
_UNREACHABLE = ("network", "tls", "cut", "bad_stream", "no_api_key", "window")
_FAILOVER_STATUSES = (401, 403, 404, 408, 409, 429)
_FAILOVER_KINDS = ("overloaded_error", "api_error", "rate_limit_error", "authentication_error", "permission_error",
                   "not_found_error", "cannot_answer", "exceed_context_size_error")
# The breaker: a profile that could not answer (unreachable, refused, failing) is skipped by later calls for a rest
# that doubles while it keeps failing, unless it is the chain's last; a call it answers, or a change of its key, URL
# or model, ends the rest.
_REST_FIRST_S = const(60)
_REST_MOST_S = const(900)
_NO_REST = ("no_api_key", "window")  # found at once, no call made: nothing to spare


def fails_over(exc):
    """True when the next profile of a chain should be asked instead (nothing of the reply shown yet)."""
    status = exc.status or 0
    return exc.kind in _UNREACHABLE or status in _FAILOVER_STATUSES or status >= 500 or exc.kind in _FAILOVER_KINDS


def key_refused(exc):
    return exc.status in (401, 403) or exc.kind in ("authentication_error", "permission_error")


def has_free(config, job):
    if not config.get("llm_config", "fallback"):
        return False
    for profile in profiles.chain(config, job):
        if profile.free:
            return True
    return False


def note(route):
    return _NOTE.format(route.profile.name, skipped(route))


def skipped(route):
    return ", ".join(name + " " + why for name, why in route.skipped)


async def stream(models, route, system, messages, *, tools=None, on_delta=None, tool_choice=None, model=None,
                 on_tool=None, max_tokens=None, fitting=None):
    """Models.stream() along the chain of the route's job, from the profile that answered the turn so far."""
    config = models.config
    chain = profiles.chain(config, route.job)
    if route.profile is not None:  # a later round of the turn: from the profile that answered on
        names = [p.name for p in chain]
        if route.profile.name in names:
            chain = chain[names.index(route.profile.name):]
    shown = [False]

    async def delta(text):
        shown[0] = True
        await on_delta(text)

    over_budget = config.get("llm_config", "fallback") and models.budget_spent is not None and models.budget_spent()
    for i, profile in enumerate(chain):
        last = i == len(chain) - 1
        if over_budget and not profile.free:
            route.skipped.append((profile.name, "over today's budget"))
            if last:
                raise ModelError("budget", "The day's token budget is spent and no free profile could answer.")
            continue
        left = resting(models, profile)
        if left and not last and not route.shown:  # once text was shown, only the profile that showed it answers
            route.skipped.append((profile.name, "resting {} s more: {}".format(left, models.rests[profile.name][3])))
            continue
        try:
            result = await _call(models, profile, system, messages, tools=tools,
                                 on_delta=delta if on_delta else None, tool_choice=tool_choice, model=model,
                                 on_tool=on_tool, max_tokens=max_tokens, fail_fast=not last, fitting=fitting)
        except ModelError as exc:
            if last or shown[0] or route.shown or not fails_over(exc):
                if route.skipped:
                    exc.message += " ({})".format(skipped(route))
                raise
            why = _why(exc)
            _rest(models, profile, exc, why)
            route.skipped.append((profile.name, why))
            log("llm: {} {} ({}); asking {}".format(profile.name, why, exc.message, chain[i + 1].name))
            if key_refused(exc):
                _tell_once(models, profile.name, exc.message)
            continue
        models.rests.pop(profile.name, None)
        result.profile = profile.name
        route.profile = profile
        models.answered = (profile.name, result.model or profile.model, list(route.skipped))
        if route.skipped:
            log("llm: {} answered ({})".format(profile.name, skipped(route)))
        return result


async def _call(models, profile, system, messages, *, tools, on_delta, tool_choice, model, on_tool, max_tokens,
                fail_fast, fitting):
    own = profile.anthropic_own
    asked = (model or models.config.get("llm_config", "model")) if profile.slot is None else profile.model
    listed = tools(own, asked) if callable(tools) else tools
    size = profile.window
    if size < profiles.WINDOW_CHECKED_BELOW:  # a small model's: the request fits it, or the next profile answers
        from mimi.llm import window

        system, messages, listed, max_tokens = window.fit(
            size, profile.name, system, messages, listed, max_tokens or models.config.get("llm_config", "max_tokens"),
            fitting)
    if profile.wire == profiles.OPENAI:
        client = models.openai
        if client is None:
            from mimi.llm.openai_chat import OpenAIChat

            client = OpenAIChat(models)
        return await client.stream(profile, system, messages, tools=listed, on_delta=on_delta,
                                   tool_choice=tool_choice, max_tokens=max_tokens, fail_fast=fail_fast)
    if profile.slot is None:  # claude itself: llm_config's settings, a job's model (set_watch_model) kept
        return await models.claude().stream(system, messages, tools=listed, on_delta=on_delta,
                                            tool_choice=tool_choice, model=model, on_tool=on_tool,
                                            max_tokens=max_tokens, fail_fast=fail_fast)
    return await models.claude().stream(system, messages, tools=listed, on_delta=on_delta, tool_choice=tool_choice,
                                        on_tool=on_tool if own else None, max_tokens=max_tokens, profile=profile,
                                        fail_fast=fail_fast)


def _signature(profile):
    return hash(profile.key or "") ^ hash(profile.url) ^ hash(profile.model)


def resting(models, profile):
    """Seconds the profile still rests (the breaker), or 0."""
    rest = models.rests.get(profile.name)
    if rest is None:
        return 0
    elapsed = ticks_diff(ticks_ms(), rest[0])
    left = rest[1] - elapsed // 1000
    if elapsed < 0 or left <= 0 or rest[2] != _signature(profile):  # (a tick counter wrapped: days later)
        return 0
    return left


def _rest(models, profile, exc, why):
    if exc.kind in _NO_REST:
        return
    old = models.rests.get(profile.name)
    rest = min(old[1] * 2, _REST_MOST_S) if old is not None and old[2] == _signature(profile) else _REST_FIRST_S
    rest = max(rest, min(exc.retry_after or 0, _REST_MOST_S))
    models.rests[profile.name] = (ticks_ms(), rest, _signature(profile), why)
    log("llm: {} rests {} s (later calls ask the next profile first)".format(profile.name, rest))


def _tell_once(models, name, message):
    if name in models.told or models.tell is None:
        return
    models.told.append(name)
    try:
        models.tell("{} The chain's next profile answers meanwhile.".format(message))
    except Exception as exc:  # a notice must never cost the turn
        log("llm: could not tell the owner: {}".format(exc))


def _why(exc):
    """What the reply's note says of a profile that could not answer."""
    status = exc.status or 0
    if exc.kind == "no_api_key":
        return "has no key"
    if exc.kind == "window":
        return "has too small a window"
    if exc.kind == "exceed_context_size_error":
        return "refused a request over its window"
    if exc.kind == "cannot_answer":
        return "cannot answer"
    if key_refused(exc):
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
