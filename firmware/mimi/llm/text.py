# A reply's text as the pieces it streamed in (Text), and the block that gathers them while it streams.


class Text:
    """A reply's text as the str pieces it streamed in, joined only where one str is needed (str()): a long
    reply needs no hole of its size on its way to the session file, the next request and the console."""

    def __init__(self, pieces):
        self.pieces = pieces

    def __len__(self):
        n = 0
        for piece in self.pieces:
            n += len(piece)
        return n

    def __iter__(self):
        return iter(self.pieces)

    def __str__(self):
        return "".join(self.pieces)

    def strip(self):
        """str.strip() of the whole, as a Text: only the two end pieces are copied."""
        pieces = self.pieces
        start, end = 0, len(pieces)
        while start < end and (not pieces[start] or pieces[start].isspace()):
            start += 1
        while end > start and (not pieces[end - 1] or pieces[end - 1].isspace()):
            end -= 1
        out = pieces[start:end]
        if out:
            out[0] = out[0].lstrip()
            out[-1] = out[-1].rstrip()
        return Text(out)


class TextBlock:
    def __init__(self):
        self.pieces = []
        self.loose = 0  # the newest pieces not yet joined into one...
        self.loose_size = 0  # ...and their characters
        self.citations = None  # the list of citations when the API sent any

    def fold(self):
        """Join the loose pieces into one (at most about _PIECE_CHARS characters, whatever the reply's size)."""
        if self.loose > 1:
            self.pieces[-self.loose :] = ["".join(self.pieces[-self.loose :])]
        self.loose = self.loose_size = 0

