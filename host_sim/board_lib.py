# The firmware's modules where the board keeps them: under MicroPython a bundle's lib/ (or firmware/'s sources) is
# mounted at /lib, so each module's name (its __file__, a qstr the heap keeps) reads "/lib/mimi/..." as on the
# chip, not the laptop's path to the checkout: the heap a run holds does not depend on where the repository is
# (a checkout 90 characters deep held about 8 KB more). CPython takes the folder as it is.
import sys

BOARD_LIB = "/lib"


def use(folder):
    """folder on sys.path as the board has its /lib: mounted there under MicroPython; the path to import from."""
    try:
        import vfs
    except ImportError:  # CPython
        vfs = None
    if vfs is None or not hasattr(vfs, "VfsPosix"):
        sys.path.insert(0, folder)
        return folder
    vfs.mount(vfs.VfsPosix(folder), BOARD_LIB)
    sys.path.insert(0, BOARD_LIB)
    return BOARD_LIB
