# Where a model call goes: claude alone (llm_config, the default: nothing else loaded), or the chain of profiles
# (llm_use; a job's own profile first, llm_for: llm/chain.py, loaded by a board that uses one). A call runs in a
# call's scope (mimi/heap.py): on a tight heap (no PSRAM) the clients' code (llm/claude.py, the stream and SSE
# readers, the OpenAI-compatible wire: llm/__init__.py LET_GO) is let go when the last call under way ends, so a
# board at rest holds none of it, for the imports' time at each call (tens of ms). A board with PSRAM keeps it.
from mimi import heap
from mimi.platform import const

_FIRST_BYTE_TIMEOUT_S = const(60)  # request sent, no status line yet: the API is not answering
_STREAM_IDLE_TIMEOUT_S = const(90)  # no byte at all for this long (the API pings every few seconds): dead
_STREAM_DEADLINE_S = const(600)  # one whole reply, first byte to last; a longer one is cut and reported

class Route:
    """One turn's way through the chain: the profile that answers (its later rounds start there) and the ones
    that could not, with why. shown: some of the turn's text reached the user, so no other profile may answer."""

    def __init__(self, job=None):
        self.job = job
        self.profile = None
        self.skipped = []  # (profile name, why)
        self.shown = False


def job_of(meta):
    """The job (llm_for) a turn is for, from its message's extras: a watcher's or the heartbeat's; else None."""
    source = meta.get("source") if isinstance(meta, dict) else None
    return source if source in ("watcher", "heartbeat") else None


class Models:
    """stream() as Claude.stream(), with the route of the turn (its job, and the profile that answered so far).
    The wiring (app.py) sets budget_spent (True once the day's token budget is spent) and tell (the owner's
    notice, once a boot per profile whose key was refused)."""

    # The limits of one call, class attributes so the host runner's --limits option can shorten them.
    first_byte_s = _FIRST_BYTE_TIMEOUT_S
    idle_s = _STREAM_IDLE_TIMEOUT_S
    deadline_s = _STREAM_DEADLINE_S

    def __init__(self, config):
        self.config = config
        self.budget_spent = None
        self.tell = None
        self.answered = None  # (profile name, model, skipped) of the last call that answered: status
        self.openai = None  # an OpenAI-compatible client to use instead of one made per call (a test's)
        self.tokens_field = {}  # openai profile name -> the max tokens field its server takes, once it refused one
        self.told = []  # profiles whose refused key the owner was told of
        self.mcp_servers = None  # Claude's MCP connector: the remote servers (mcp/client_service.py)
        self.rests = {}  # profile name -> (since ms, rest s, signature, why): the breaker (llm/chain.py)

    def secrets(self):
        """What a provider's error must never show (asked only when a call failed): every secret setting that is
        set and the tokens of Claude's MCP connector, sent with the requests; an MCP server the board calls itself
        never sees a provider's request, and a tool's result reaches one masked (tools/registry.py)."""
        from mimi.safety import masking

        return masking.secrets(self.config, [server.get("authorization_token") for server in self.mcp_servers or ()])

    def claude(self):
        """The Claude client for one call (llm/claude.py, loaded now)."""
        from mimi.llm.claude import Claude

        return Claude(self)

    def plain(self, job=None):
        """True while calls go to claude alone: the chain is the default and the job has no profile of its own."""
        cfg = self.config
        return cfg.get("llm_config", "chain") == "claude" and (job is None or not cfg.get("llm_config", "for_" + job))

    def has_free(self, job=None):
        """A profile that costs nothing may answer once the day's budget is spent (budget_fallback on)."""
        if self.plain(job):
            return False
        from mimi.llm import chain

        return chain.has_free(self.config, job)

    async def stream(self, system, messages, *, tools=None, on_delta=None, tool_choice=None, model=None,
                     on_tool=None, max_tokens=None, route=None, fitting=None):
        """One reply, from the first profile of the route's chain that can give it (its result's .profile names
        it). tools: a list, or tools(server, model) giving the list for a call to that model, Claude's own tools
        included when server is True.
        Each profile's request fits its window (llm/window.py; fitting: the turn's system prompt, which a small
        window trims; claude's is Claude's own). Raises ModelError (the last profile's, naming why the ones before
        it could not)."""
        route = route or Route()
        with heap.scope("call"):
            if not self.plain(route.job):
                from mimi.llm import chain

                return await chain.stream(self, route, system, messages, tools=tools, on_delta=on_delta,
                                          tool_choice=tool_choice, model=model, on_tool=on_tool,
                                          max_tokens=max_tokens, fitting=fitting)
            if callable(tools):  # claude's window is Claude's own: it holds whatever the board sends
                tools = tools(True, model or self.config.get("llm_config", "model"))
            result = await self.claude().stream(system, messages, tools=tools, on_delta=on_delta,
                                                tool_choice=tool_choice, model=model, on_tool=on_tool,
                                                max_tokens=max_tokens)
            result.profile = "claude"
            self.answered = ("claude", result.model or model or self.config.get("llm_config", "model"), ())
            return result


def note(route):
    """The reply's last line when a profile other than the first answered (llm_note), else None."""
    if not route.skipped or route.profile is None:
        return None
    from mimi.llm import chain

    return chain.note(route)
