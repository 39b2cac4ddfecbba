# The module the holders below keep, each a different way.


class Refused(OSError):
    pass


class Session:
    pass


def request():
    return "answered"
