# The model profiles' console commands (llm_add, llm_key, llm_ctx, llm_list, llm_remove, llm_use, llm_for,
# llm_price, llm_note, budget_fallback), imported when one is typed.
from mimi import platform
from mimi.settings import KEY_DROPPED
from mimi.llm import profiles
from mimi.llm.profiles import CLAUDE, DEFAULT, JOBS, NS

_NS = "llm_config"
_HELP = "README: Models"


def _say(text):
    platform.console_write(text + "\n")


def _slot_of(config, name):
    for slot, line in profiles.slots(config):
        if line.split(None, 1)[0] == name:
            return slot
    return None


def _free_slot(config):
    taken = [slot for slot, _ in profiles.slots(config)]
    for slot in range(1, profiles.SLOTS + 1):
        if slot not in taken:
            return slot
    return None


def _on_off(word, what):
    word = word.lower()
    if word not in ("on", "off"):
        raise ValueError("{} takes on or off".format(what))
    return 1 if word == "on" else 0


async def add(app, name, wire, url, model, key=None):
    """llm_add: a new profile in a free slot, or the same name's changed (its price kept, and its key unless a key
    is given or the URL goes to another scheme, host or port); claude's own settings for the name claude."""
    config = app.config
    _no_key_in(name, wire, url, model)
    name = profiles.check_name(name)
    if name == CLAUDE:
        if wire.lower() != profiles.ANTHROPIC:
            raise ValueError("the claude profile speaks anthropic; add an openai server under another name")
        dropped = config.set(_NS, "api_base", url)
        config.set(_NS, "model", model)
        if key:
            config.set(_NS, "api_key", key)
        _say("profile claude saved: {} {} (set_llm_api, set_model{}){}".format(
            url, model, ", set_api_key" if key else "", _dropped(dropped and not key)))
        return
    slot = _slot_of(config, name)
    old = config.get(NS, "p{}".format(slot)).split() if slot else []
    line = profiles.check_line(" ".join([name, wire, url, model] + old[4:]))  # its price and window kept
    if slot is None:
        slot = _free_slot(config)
        if slot is None:
            raise ValueError("all {} profile places are taken; llm_remove one first".format(profiles.SLOTS))
        config.unset(NS, "k{}".format(slot))  # a removed profile's key never carries over
    dropped = config.set(NS, "p{}".format(slot), line)  # a URL on another host drops the key (settings/)
    if key:
        config.set(NS, "k{}".format(slot), key)
    profile = profiles.find(config, name)
    _say("profile {} {}: {}{}".format(name, "changed" if old else "added", _describe(profile),
                                      _dropped(dropped and not key)))
    if name not in config.get(_NS, "chain").split(","):
        _say("  ask it with: llm_use {},{} (or llm_for watcher {})".format(config.get(_NS, "chain"), name, name))


def _no_key_in(name, wire, url, model):
    """A key typed in a slot that is not secret (the model's, when the model was left out) is refused, never shown."""
    from mimi.settings import looks_like_key

    for what, word in (("name", name), ("wire format", wire), ("URL", url), ("model", model)):
        if looks_like_key(word):
            raise ValueError("the {} looks like a key: not saved (the key comes last: llm_add <name> "
                             "<anthropic|openai> <url> <model> [key])".format(what))


def _dropped(dropped):
    return "; " + KEY_DROPPED if dropped else ""


async def key(app, name, value):
    """llm_key: a profile's API key (off: none)."""
    config = app.config
    name = profiles.check_name(name)
    if name == CLAUDE:
        ns, field = _NS, "api_key"
    else:
        slot = _slot_of(config, name)
        if slot is None:
            raise ValueError(_unknown(config, name))
        ns, field = NS, "k{}".format(slot)
    if value.lower() == "off":
        config.unset(ns, field)
        _say("profile {}: key removed".format(name))
    else:
        config.set(ns, field, value)
        _say("profile {}: key {} (saved; in effect now)".format(name, _masked(config.get(ns, field))))


async def ctx(app, name, value):
    """llm_ctx: a profile's context window in tokens, kept in its line (default: its kind's, llm/profiles.py)."""
    config = app.config
    name = profiles.check_name(name)
    if name == CLAUDE:
        raise ValueError("claude's window is Claude's own (200000 tokens); for an Anthropic-compatible server with "
                         "a smaller one, add it as a profile: llm_add <name> anthropic <url> <model>, then llm_ctx")
    slot = _slot_of(config, name)
    if slot is None:
        raise ValueError(_unknown(config, name))
    window = [] if value.lower() == DEFAULT else [str(profiles.check_window(value))]
    _rewrite(config, slot, window=window)
    _say("profile {}: {} (saved; in effect now)".format(name, _window_text(profiles.find(config, name))))


def _rewrite(config, slot, price=None, window=None):
    """A profile's line with its price and/or window changed (a list: [] takes it away; None keeps it)."""
    parts = config.get(NS, "p{}".format(slot)).split()
    old_price, old_window = profiles.extras(parts[4:])
    price = ([old_price] if old_price else []) if price is None else price
    window = ([old_window] if old_window else []) if window is None else window
    config.set(NS, "p{}".format(slot), " ".join(parts[:4] + price + window))


def _window_text(profile):
    return "window {} tokens{}".format(profile.window, "" if profile.ctx else " (default)")


async def remove(app, name):
    """llm_remove: a profile and its key; the chain and the jobs forget it."""
    config = app.config
    name = profiles.check_name(name)
    if name == CLAUDE:
        raise ValueError("claude is built in; take it out of the chain with llm_use instead")
    slot = _slot_of(config, name)
    if slot is None:
        raise ValueError(_unknown(config, name))
    config.unset(NS, "p{}".format(slot))
    config.unset(NS, "k{}".format(slot))
    chain = [n for n in config.get(_NS, "chain").split(",") if n != name]
    if chain != config.get(_NS, "chain").split(","):
        config.set(_NS, "chain", ",".join(chain) or CLAUDE)
        _say("  the chain is now: {}".format(chain_text(config)))
    for job in JOBS:
        if config.get(_NS, "for_" + job) == name:
            config.unset(_NS, "for_" + job)
            _say("  {} follows the chain again".format(job))
    _say("profile {} removed".format(name))


async def use(app, names):
    """llm_use: the chain, first first."""
    config = app.config
    chain = profiles.check_names(names).split(",")
    for name in chain:
        if profiles.find(config, name) is None:
            raise ValueError(_unknown(config, name))
    config.set(_NS, "chain", ",".join(chain))
    _say("chain: {} (saved; in effect now)".format(chain_text(config)))


async def job(app, which, name):
    """llm_for: the profile a job asks first (default: the chain)."""
    config = app.config
    which = which.lower()
    if which not in JOBS:
        raise ValueError("the jobs are {}".format(", ".join(JOBS)))
    name = profiles.check_name(name)
    if name == DEFAULT:
        config.unset(_NS, "for_" + which)
        _say("{}: the chain ({})".format(which, chain_text(config)))
        return
    if profiles.find(config, name) is None:
        raise ValueError(_unknown(config, name))
    config.set(_NS, "for_" + which, name)
    _say("{}: {} first, then the chain (saved; in effect now)".format(which, name))


async def price(app, name, given, output=None):
    """llm_price: USD per million tokens in and out (off: the default: list price, or free on the LAN)."""
    config = app.config
    name = profiles.check_name(name)
    if name != CLAUDE and _slot_of(config, name) is None:
        raise ValueError(_unknown(config, name))
    if given.lower() == "off":
        text = ""
    elif output is None:
        raise ValueError("usage: llm_price <name> <usd_per_mtok_in> <usd_per_mtok_out>, e.g. llm_price {} 0.15 0.6"
                         .format(name))
    else:
        text = profiles.price_text(profiles.parse_price(given + "/" + output))
    if name == CLAUDE:
        config.set(_NS, "price", text)
    else:
        _rewrite(config, _slot_of(config, name), price=[text] if text else [])
    _say("profile {}: {}".format(name, _price_text(profiles.find(config, name))))


async def note(app, word):
    app.config.set(_NS, "note", _on_off(word, "llm_note"))
    _say("a reply from a profile other than the first {} (saved)".format(
        "says which answered" if app.config.get(_NS, "note") else "no longer says so"))


async def fallback(app, word):
    app.config.set(_NS, "fallback", _on_off(word, "budget_fallback"))
    _say("once the day's budget is spent, {} (saved)".format(
        "a free profile of the chain answers" if app.config.get(_NS, "fallback") else "nothing answers until midnight"))


async def list_all(app):
    """llm_list: every profile, the chain, the jobs, the last answer."""
    config = app.config
    _say("model profiles ({}):".format(_HELP))
    for profile in profiles.every(config):
        _say("  {}: {}".format(profile.name, _describe(profile)))
    for slot, line in profiles.slots(config):
        if profiles.find(config, line.split(None, 1)[0]) is None:
            _say("  llm_profiles.p{} cannot be read ({}): llm_add it again".format(slot, line[:40]))
    _say("chain: {}".format(chain_text(config)))
    jobs = ["{}: {}".format(job, config.get(_NS, "for_" + job) or "the chain") for job in JOBS]
    _say("jobs: " + "; ".join(jobs))
    _say("reply note: {}; budget fallback: {}".format("on" if config.get(_NS, "note") else "off",
                                                     "on" if config.get(_NS, "fallback") else "off"))
    answered = app.agent.models.answered
    if answered:
        _say("last answer: " + answered_text(answered))


def answered_text(answered):
    """"local (qwen2.5:7b); claude unreachable" of Models.answered."""
    name, model, skipped = answered
    why = ", ".join(n + " " + w for n, w in skipped)
    return "{} ({}){}".format(name, model, "; " + why if why else "")


def _describe(profile):
    key = profile.key
    return "{} {} {}, key {}, {}, {}".format(profile.wire, profile.url, profile.model,
                                             _masked(key) if key else "none", _price_text(profile),
                                             _window_text(profile))


def _price_text(profile):
    if profile.price is not None:
        return "free (priced 0)" if profile.price == (0, 0) else "priced {} USD/Mtok in/out".format(
            profiles.price_text(profile.price))
    if profile.free:
        return "free (on the LAN; llm_price to count it)"
    if profile.wire == profiles.ANTHROPIC:
        return "list price by model"
    return "price unknown (llm_price sets one)"


def chain_text(config):
    """"claude, then local": the chain's profiles."""
    return ", then ".join(p.name for p in profiles.chain(config))


def _masked(value):
    from mimi.settings import mask

    return mask(value)


def _unknown(config, name):
    known = ", ".join(p.name for p in profiles.every(config))
    return "no profile named '{}' (profiles: {}; llm_add makes one)".format(name, known)
