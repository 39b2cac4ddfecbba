# Where everything lives under the data root; the default files written on first boot are storage/defaults.py.
from mimi import platform
from mimi.platform import const
from mimi.storage import files

_DATE_LEN = const(10)  # YYYY-MM-DD


def check_date(date_str):
    """Return date_str when it is YYYY-MM-DD, else raise ValueError (it becomes a file name)."""
    ok = isinstance(date_str, str) and len(date_str) == _DATE_LEN
    if ok:
        for i in range(_DATE_LEN):
            c = date_str[i]
            if (c != "-") if i in (4, 7) else not ("0" <= c <= "9"):
                ok = False
                break
    if not ok:
        raise ValueError("date must look like YYYY-MM-DD, got {!r}".format(date_str))
    return date_str


class Flash:
    """Paths of the data root: config/, memory/, memory/daily/, sessions/, certs/."""

    def __init__(self, root):
        self.root = root
        self.config_dir = files.join(root, "config")
        self.memory_dir = files.join(root, "memory")
        self.daily_dir = files.join(self.memory_dir, "daily")
        self.sessions_dir = files.join(root, "sessions")
        self.certs_dir = files.join(root, "certs")
        self.soul_path = files.join(self.config_dir, "SOUL.md")
        self.user_path = files.join(self.config_dir, "USER.md")
        self.memory_path = files.join(self.memory_dir, "MEMORY.md")

    def daily_path(self, date_str):
        return files.join(self.daily_dir, check_date(date_str) + ".md")

    def folders(self):
        return (
            self.root,
            self.config_dir,
            self.memory_dir,
            self.daily_dir,
            self.sessions_dir,
            self.certs_dir,
        )

    def seed(self):
        """Create the folders and any missing default file; return the paths written.

        A file that exists is never touched, even when empty: the owner may have emptied it.
        """
        from mimi.storage import space

        # A flash full at boot must not stop the device: old conversations make room, else it goes without.
        policy = space.Space(self)
        for folder in self.folders():
            _full_is_not_fatal(policy, "the folder " + folder, files.makedirs, folder)
        from mimi.storage import defaults

        created = []
        for path, text in (
            (self.soul_path, defaults.DEFAULT_SOUL),
            (self.user_path, defaults.DEFAULT_USER),
            (self.memory_path, defaults.DEFAULT_MEMORY),
        ):
            files.remove_stale_tmp(path)
            if not files.exists(path):
                if _full_is_not_fatal(policy, path, files.write_atomic, path, text):
                    created.append(path)
        platform.unload(defaults.__name__)  # at every boot, written or not: its texts are not kept
        return created


def _full_is_not_fatal(policy, what, fn, *args):
    try:
        policy.guarded(lambda: fn(*args), what)
        return True
    except OSError as exc:
        if not files.is_full(exc):
            raise
        return False
