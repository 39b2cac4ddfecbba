# Tables held as constants: a row a line, each led by "\n", its fields tab-separated, the first field its name
# (the settings in settings/, the console's commands, the built-in tools' DEFS). A str or bytes constant stays in
# the image (flash on a ROMFS board): a row is found by its leading fields and read in place, no table parsed
# whole. The one reader of them all.


def _marks(table):
    return ("\n", "\t") if isinstance(table, str) else (b"\n", b"\t")


def _same(table, value):  # a str as the table holds it
    return value if isinstance(table, str) else value.encode()


def find(table, *names):
    """Where the fields after the row's leading `names` start (each a str, as typed), or -1: no such row, or a
    name holding a tab or a newline (it would match across fields)."""
    line, tab = _marks(table)
    needle = line + tab.join([_same(table, name) for name in names]) + tab
    if needle.count(tab) != len(names) or needle.count(line) != 1:
        return -1
    at = table.find(needle)
    return at if at < 0 else at + len(needle)


def rows(table):
    """The start of each row, in table order."""
    line = _marks(table)[0]
    start = 1
    while start < len(table):
        yield start
        start = table.find(line, start) + 1
        if not start:
            return


def skip(table, at, count):
    """Where the field `count` fields after the one at `at` starts."""
    tab = _marks(table)[1]
    while count:
        at = table.find(tab, at) + 1
        count -= 1
    return at


def end(table, at):
    """Where the row holding `at` ends (its newline)."""
    found = table.find(_marks(table)[0], at)
    return len(table) if found < 0 else found


def start(table, at):
    """Where the row holding `at` starts (its first field)."""
    return table.rfind(_marks(table)[0], 0, at) + 1


def field(table, at, index=0):
    """The field `index` fields after the one at `at`, a slice of the table (str or bytes)."""
    at = skip(table, at, index)
    stop = end(table, at)
    tab = table.find(_marks(table)[1], at, stop)
    return table[at:stop if tab < 0 else tab]


def fields(table, at):
    """The row's fields from the one at `at` to its end, each a str."""
    text = table[at:end(table, at)]
    return (text if isinstance(text, str) else str(text, "utf-8")).split("\t")


def has(table, at, index, value):
    """Is the field `index` fields after the one at `at` exactly `value` (compared in place, nothing sliced)."""
    at = skip(table, at, index)
    value = _same(table, value)
    if not table.startswith(value, at):
        return False
    after = at + len(value)
    line, tab = _marks(table)
    return after == len(table) or table.startswith(tab, after) or table.startswith(line, after)
