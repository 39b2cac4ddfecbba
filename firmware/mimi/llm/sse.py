# Incremental Server-Sent Events parser (WHATWG rules): one line in, a finished event out.
from mimi.platform import const

# Most characters one event's data may hold; a Claude event is well under 1 KB, so this only
# stops a broken or hostile stream from filling the heap.
EVENT_MAX = const(64 * 1024)
SSE_LINE_MAX = const(16384)  # bytes of one line the clients read (Claude's web tools need more: llm/claude.py)


class SSEError(ValueError):
    """The stream broke a limit of this parser (the data of one event was too large)."""


class SSEParser:
    """Feed it the lines of an event stream one at a time; it hands back each finished event.

    feed() returns (event_name, data) when a blank line completes an event, else None.
    The name defaults to "message"; several data lines join with "\\n".
    """

    def __init__(self, event_max=EVENT_MAX):
        self.event_max = event_max
        self._first_line = True
        self._reset()

    def _reset(self):
        self._name = ""
        self._data = []  # one piece per data line: joined once, at dispatch
        self._size = 0
        self._skipping = False  # after an oversized event: drop lines until its blank line

    def feed(self, line):
        """Take one line (str, terminator optional) and return (event_name, data) or None."""
        if line.endswith("\n"):
            line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
        if self._first_line:
            self._first_line = False
            if line.startswith("\ufeff"):  # a byte order mark may open the stream
                line = line[1:]
        if not line:
            return self._dispatch()
        if self._skipping or line[0] == ":":  # ':' opens a comment (a keep-alive, often)
            return None
        colon = line.find(":")
        if colon < 0:  # a line without a colon is a field with an empty value
            field, value = line, ""
        else:
            field = line[:colon]
            start = colon + 2 if line[colon + 1 : colon + 2] == " " else colon + 1
            value = line[start:]
        if field == "data":
            self._add_data(value)
        elif field == "event":
            self._name = value
        # "id", "retry" and unknown fields are accepted and ignored
        return None

    def finish(self):
        """End of stream. A pending event with no blank line after it is dropped, as the
        EventSource spec requires (a stream cut mid-event must not yield half an event)."""
        self._reset()

    def _add_data(self, value):
        # each line after the first costs one "\n" separator
        size = self._size + len(value) + (1 if self._data else 0)
        if size > self.event_max:
            self._reset()
            self._skipping = True
            raise SSEError("server-sent event larger than {} characters".format(self.event_max))
        self._size = size
        self._data.append(value)

    def _dispatch(self):
        data = self._data
        name = self._name or "message"
        self._reset()
        if not data:  # a blank line after no data lines dispatches nothing
            return None
        return name, data[0] if len(data) == 1 else "\n".join(data)
