# The one call that condenses a session's oldest turns: its prompt, its transcript, reading its reply.
from mimi.platform import const

SUMMARY_MAX = const(600)  # characters of one summary in the daily note
FACTS_MAX = const(3)  # proposed MEMORY.md lines per summary
_FACT_MAX = const(200)  # characters of one
MESSAGE_CHARS = const(1200)  # characters of one message shown to the summariser
TRANSCRIPT_MAX = const(12 * 1024)  # characters of the whole transcript sent

_SYSTEM = (
    "You condense the older part of a chat between a personal assistant (Mimi) and a user, so it can be "
    "dropped from the chat. Reply with exactly one line 'SUMMARY: ' followed by two to four plain sentences "
    "that keep what matters later: decisions, plans, open questions, promises, names and numbers. Write it "
    "in the language of the chat, in the third person ('the user asked ...')."
)
_FACTS = (
    " Then, only for lasting facts the user stated about themselves or their wishes (not passing "
    "remarks, never passwords, keys or tokens), up to {} lines 'FACT: ' with one short fact each. "
    "No FACT line when there is none."
)


def system(facts_ok):
    """The summariser's system prompt; FACT lines are asked for only where facts may be kept."""
    return _SYSTEM + (_FACTS.format(FACTS_MAX) if facts_ok else "")


def head(pieces):
    """(str pieces, cut) of a message's text read piece by piece, as the summariser is shown it: stripped,
    its first MESSAGE_CHARS characters, cut True when more follow (nothing after them is read)."""
    out, have = [], 0
    for piece in pieces:
        if not have:
            piece = piece.lstrip()
        take = piece[: MESSAGE_CHARS - have]
        if take:
            out.append(take)
            have += len(take)
        if len(take) < len(piece) and piece[len(take) :].strip():
            return out, True
    while out:  # the end stripped: trailing whitespace may fill the last pieces
        last = out.pop().rstrip()
        if last:
            out.append(last)
            break
    return out, False


def transcript(messages):
    """The older turns, (role, text pieces, cut) as head() gives them (taken one at a time), as one user
    message's text in str pieces: each message cut to MESSAGE_CHARS, the whole to TRANSCRIPT_MAX; byte for byte
    "\\n{name}: {text}[ [...]]\\n" each. Never joined: the request escapes the pieces as it writes them
    (agent/consolidate.py Transcript)."""
    yield "The older part of the chat, oldest first:\n"
    size = 0
    for role, text, cut in messages:
        name = "User" if role == "user" else "Mimi"
        size += len(name) + (10 if cut else 4)
        for piece in text:
            size += len(piece)
        if size > TRANSCRIPT_MAX:
            yield "\n[... the rest is left out]\n"
            return
        yield "\n" + name + ": "
        yield from text
        yield " [...]\n" if cut else "\n"


def parse_reply(text):
    """(summary, [facts]) from the summariser's reply; summary "" when it sent nothing usable."""
    summary, facts = [], []
    for raw in (text or "").split("\n"):
        line = raw.strip()
        upper = line[:8].upper()
        if upper.startswith("FACT:"):
            fact = " ".join(line[5:].split())
            if fact and len(facts) < FACTS_MAX:
                facts.append(fact[:_FACT_MAX])
        elif upper.startswith("SUMMARY:"):
            summary.append(line[8:].strip())
        elif line and summary and not facts:
            summary.append(line)  # a summary running over several lines
    if not summary:  # no format kept: the whole reply is the summary
        summary = [line for line in (text or "").split("\n") if line.strip() and "FACT:" not in line.upper()]
    flat = " ".join(" ".join(summary).split())
    if len(flat) > SUMMARY_MAX:
        flat = flat[: SUMMARY_MAX - 3] + "..."
    return flat, facts
