# Memory tools: remember (MEMORY.md), recall (search MEMORY.md and daily notes), note_today.
from mimi import platform
from mimi.platform import const
from mimi.storage.memory import SEARCH_HITS
from mimi.tools.registry import ToolError

_WORD_MIN = const(3)  # shorter words are not searched on their own

_app = [None]


def setup(app):
    _app[0] = app  # its after-turn hook (consolidation) is tools/loading.py AFTER_TURN's, added at boot
    app.console.commands.add("memory_consolidate", _consolidate_cmd, "memory_consolidate [chat]", 0, 1,
                             "summarise a chat's older turns into today's note now (default: the console)")


async def _consolidate_cmd(chat=None):
    from mimi.agent import consolidate

    print(await consolidate.by_hand(_app[0], chat or "cli_console"))


def _memory():
    return _app[0].memory


class Remember:
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

    def run(self, input):
        try:
            entry = _memory().append(input["text"], platform.utc_date())
        except ValueError as exc:
            raise ToolError(str(exc))
        return "saved to MEMORY.md: " + entry


def _search(query):
    """Hits for the whole query; when there are none, hits for each longer word of it."""
    memory = _memory()
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


class Recall:
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

    def run(self, input):
        query = input["query"].strip()
        if not query:
            raise ToolError("query is empty: give a word or phrase to look for")
        hits = _search(query)
        if not hits:
            return "nothing found for '{}' in MEMORY.md or the daily notes".format(query)
        return "\n".join("{}: {}".format(source, line) for source, line in hits)


class NoteToday:
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

    def run(self, input):
        date = platform.utc_date()
        try:
            _memory().append_daily(input["text"], date)
        except ValueError as exc:
            raise ToolError(str(exc))
        return "added to memory/daily/{}.md".format(date)


TOOLS = (Remember(), Recall(), NoteToday())
