# The turn a tool call runs for: the chat it answers in, the inbound message's extras and the role it acts with.
from mimi.bus.message import CLI
from mimi.channels.system import requesting_chat
from mimi.safety import roles


class Turn:
    """Made once per turn by whoever runs tools (the agent, the console, a watcher, a rule, an MCP client)
    and handed to every call: registry.execute(name, data, turn). Nothing about a turn is kept anywhere
    else, so two turns waiting at once (a confirmation, a slow tool) never see each other's chat or role."""

    def __init__(self, channel, chat_id, meta=None, role=roles.OBSERVER):
        self.channel = channel
        self.chat_id = "" if chat_id is None else str(chat_id)
        self.meta = meta if isinstance(meta, dict) else {}
        self.role = role
        self.asker = requesting_chat(channel, self.chat_id)  # (channel, chat_id) a system turn answers in
        self.profile = None  # the model profile that asked for the calls (llm/models.py), for the audit log
        self.found = []  # the tools find_tools found (tools/finder.py): offered for the rest of the turn

    @property
    def watcher(self):
        """The watcher whose turn this is, or None."""
        return self.meta.get("watcher")

    @property
    def unattended(self):
        """Nobody is there to answer a confirmation: a local rule's actions (watch/rules.py), an MCP client's
        call (mcp/)."""
        return "rule" in self.meta or "mcp" in self.meta


def of(config, channel, chat_id, meta=None):
    """The turn of an inbound message, with the role it acts with (safety/roles.py of_turn)."""
    turn = Turn(channel, chat_id, meta)
    turn.role = roles.of_turn(config, channel, turn.meta, turn.asker)
    return turn


def console():
    """A tool run by hand on the console (tool_exec): the owner, answering in the console."""
    return Turn(CLI, "console", None, roles.OWNER)
