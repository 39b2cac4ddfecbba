# Memory tools: remember (MEMORY.md), recall (search MEMORY.md and daily notes), note_today.
from mimi import platform
from mimi.platform import const
from mimi.storage.memory import SEARCH_HITS
from mimi.tools.registry import Tool, ToolError

_WORD_MIN = const(3)  # shorter words are not searched on their own

# The console command (channels/commands.py add_lines; builtin_defs.COMMANDS keeps a copy for boot). The
# after-turn hook (consolidation) is tools/loading.py AFTER_TURN's, added at boot.
COMMANDS = (
    "\nmemory_consolidate\tmemory_consolidate [chat]\t0\t1"
    "\tsummarise a chat's older turns into today's note now (default: the console)"
    "\tmimi.tools.memory_tools:consolidate_command(app)"
    "\n"
)


async def consolidate_command(app, chat=None):
    from mimi.agent import consolidate

    platform.log(await consolidate.by_hand(app, chat or "cli_console"))


class Remember(Tool):
    name = "remember"
    description = (
        "Save one lasting fact about your owner or their wishes to long-term memory (MEMORY.md, "
        "which you see in every conversation). One short line; never store passwords or keys."
    )
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "the fact, one short line"}},
        "required": ["text"],
    }
    tier, acting, level = "owner", True, "autonomous"  # memory is in every later prompt; the reply says it

    def run(self, input):
        try:
            entry = self.app.memory.append(input["text"], platform.utc_date())
        except ValueError as exc:
            raise ToolError(str(exc))
        return "saved to MEMORY.md: " + entry


def _search(memory, query):
    """Hits for the whole query; when there are none, hits for each longer word of it."""
    hits = memory.search(query)
    if hits:
        return hits
    for word in query.split():
        if len(word) < _WORD_MIN:
            continue
        for hit in memory.search(word):
            if hit not in hits:
                hits.append(hit)
            if len(hits) >= SEARCH_HITS:
                return hits
    return hits


class Recall(Tool):
    name = "recall"
    description = (
        "Search long-term memory (MEMORY.md) and the daily notes for lines containing a word or "
        "phrase (any case). Returns matching lines with their source, newest notes first."
    )
    schema = {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "a keyword or short phrase"}},
        "required": ["query"],
    }
    tier, acting, level = "owner", False, "autonomous"  # the owner's memory: read by the owner's turns alone

    def run(self, input):
        query = input["query"].strip()
        if not query:
            raise ToolError("query is empty: give a word or phrase to look for")
        hits = _search(self.app.memory, query)
        if not hits:
            return "nothing found for '{}' in MEMORY.md or the daily notes".format(query)
        return "\n".join("{}: {}".format(source, line) for source, line in hits)


class NoteToday(Tool):
    name = "note_today"
    description = (
        "Add a note to today's daily note (memory/daily/YYYY-MM-DD.md, UTC date): events, tasks, "
        "things said today. Recent daily notes are shown to you in later conversations."
    )
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "the note (a line or a few)"}},
        "required": ["text"],
    }
    tier, acting, level = "owner", True, "autonomous"

    def run(self, input):
        date = platform.utc_date()
        try:
            self.app.memory.append_daily(input["text"], date)
        except ValueError as exc:
            raise ToolError(str(exc))
        return "added to memory/daily/{}.md".format(date)


TOOLS = (Remember, Recall, NoteToday)
