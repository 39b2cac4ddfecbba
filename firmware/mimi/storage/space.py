# A full flash: the write guard every write goes through; the clean-up (space_free) loads at the first full flash.
from mimi.storage.files import is_full

current = None  # the device's policy (setup); None: writes are tried once, as they are


def guarded(write, what, keep=()):
    """Run write(); on a full flash let the policy free room and run it once more.

    `what` names the data for the owner ("the conversation cli_console"); `keep` are paths
    the clean-up must not remove (the file being written). A second failure is raised.
    """
    if current is None:
        return write()
    return current.guarded(write, what, keep)


class Space:
    """What a full flash may give up: the device's folders and who hears of a clean-up.

    The clean-up itself (space_free.Cleanup: old conversations, daily notes, audit days) is
    imported at the first full flash; a device whose flash never fills never loads it.
    """

    def __init__(self, flash, audit_dir=None, tell=None, today=None):
        self.flash = flash  # layout.Flash
        self.audit_dir = audit_dir
        self.tell = tell or print
        self.today = today  # a function giving YYYY-MM-DD; None: the clock's UTC date
        self.cleanup = None  # space_free.Cleanup, made at the first full flash

    def guarded(self, write, what, keep=()):
        try:
            return write()
        except OSError as exc:
            if not is_full(exc):
                raise
        if self.cleanup is None:
            from mimi.storage.space_free import Cleanup

            self.cleanup = Cleanup(self.flash, self.audit_dir, self.tell, self.today)
        return self.cleanup.retry(write, what, keep)


def setup(app, audit_dir=None):
    """Put the policy in front of the device's writes; returns it."""
    global current
    current = Space(app.flash, audit_dir, app.owner.tell)
    return current
