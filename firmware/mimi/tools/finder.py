# find_tools: every request offers the core tools (CORE) and this one; the model finds the others when it needs
# one: their names and first sentences are its answer, and their definitions join the rest of the turn's requests
# (agent/loop.py Exchange.tools). A small model's window, and every turn's tokens, pay for 5 definitions, not 25.
import re

from mimi.platform import const
from mimi.tools.registry import CORE, FIND_TOOLS, Tool

_FOUND_MAX = const(5)
_SENTENCE_MAX = const(160)


class FindTools(Tool):
    name = FIND_TOOLS
    description = (
        "Find more of your tools (reminders, GPIO pins, files, watchers, web, weather, messages, board state, "
        "photos...) by a few words of the task; the matches become callable for the rest of this turn."
    )
    schema = {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "the task, e.g. 'remind me later'"}},
        "required": ["query"],
    }
    tier, acting, level = "observer", False, "autonomous"  # [safety] it only lists; each found tool keeps its checks
    wants_turn = True

    def run(self, input, turn):
        tools = self.app.registry.tools
        ranked = []
        stems = _stems(input["query"])
        for name in sorted(tools):
            if name in CORE:
                continue
            score = _score(name, stems, tools[name].description)
            if score:
                ranked.append((-score, name))
        ranked.sort()  # the best first, then by name
        found = [name for _, name in ranked[:_FOUND_MAX]]
        if not found:
            others = [name for name in sorted(tools) if name not in CORE]
            return "No tool matches {!r}. The tools besides yours: {}. Ask again with a name or other words.".format(
                input["query"], ", ".join(others))
        for name in found:
            if name not in turn.found:
                turn.found.append(name)
        lines = ["Added for this turn, ready to call:"]
        for name in found:
            lines.append("- {}: {}".format(name, _first_sentence(tools[name].description)))
        return "\n".join(lines)


TOOLS = (FindTools,)


_SKIP = ("the", "and", "for", "with", "you", "your", "can", "please", "what", "how", "some", "that", "this", "from",
         "tool", "tools", "want", "need", "like", "about", "could", "would")


_BETWEEN = re.compile("[^a-z0-9_]+")


def _words(text):
    """The words of a text, lowercased: a-z, digits and '_' (a tool's name stays one word)."""
    return [word for word in _BETWEEN.split(text.lower()) if word]


def _stems(query):
    """The query's words worth matching, cut to a stem ('scheduling' finds 'schedule', 'reminders' 'reminder')."""
    out = []
    for word in _words(query):
        if len(word) < 3 or word in _SKIP:
            continue
        if "_" in word:  # a tool's name: as it is
            pass
        elif len(word) > 3 and word.endswith("s"):
            word = word[:-1]
        if len(word) > 6 and "_" not in word:
            word = word[:-3]
        if word not in out:
            out.append(word)
    return out


def _score(name, stems, description):
    """3 for a stem in the tool's name (10 for the name itself), 1 for a word of its description it begins."""
    words = _words(description)
    parts = name.split("_")
    score = 0
    for stem in stems:
        if stem == name:
            score += 10
        elif any(part.startswith(stem) or stem.startswith(part) and len(part) > 2 for part in parts):
            score += 3
        elif any(word.startswith(stem) for word in words):
            score += 1
    return score


def _first_sentence(text):
    end = text.find(". ")
    text = text if end < 0 else text[: end + 1]
    return text if len(text) <= _SENTENCE_MAX else text[: _SENTENCE_MAX - 3] + "..."
