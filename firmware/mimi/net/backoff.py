# Exponential backoff: the wait before each retry doubles from a first delay up to a ceiling.


class Backoff:
    """next() gives the wait before the coming retry; reset() after a success."""

    def __init__(self, first, most):
        self.first = first
        self.most = most
        self.delay = first

    def next(self):
        wait = self.delay
        self.delay = min(self.delay * 2, self.most)
        return wait

    def reset(self):
        self.delay = self.first
