# The two runtimes every firmware test runs under, as commands.
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_VENV_BIN = os.path.join(ROOT, ".venv", "bin")

# The heap the suite gives MicroPython: small enough to catch a module or a turn that accumulates.
# Unit tests get 512K. The whole firmware (every channel, tool, service, the safety layer and the
# watchers) gets 1024K: on the unix port every loaded module's bytecode sits in the heap (about 330 KB
# at idle after a console turn; the chip runs it from flash in the ROMFS and frozen forms), and
# BENCHMARKS.md measures the smallest heap a standard conversation needs.
MP_HEAP = os.environ.get("MIMI_MP_HEAP", "512K")
FIRMWARE_MP_HEAP = os.environ.get("MIMI_FIRMWARE_MP_HEAP", "1024K")


def _find(name):
    path = os.path.join(_VENV_BIN, name)
    return path if os.path.exists(path) else shutil.which(name)


# MIMI_MICROPYTHON: another MicroPython binary (e.g. ../shared/tools/micropython32: 32-bit, mbedTLS in the heap).
MICROPYTHON = [os.environ.get("MIMI_MICROPYTHON") or _find("micropython") or "micropython", "-X", "heapsize=" + MP_HEAP]
MICROPYTHON_FIRMWARE = [MICROPYTHON[0], "-X", "heapsize=" + FIRMWARE_MP_HEAP]
CPYTHON = [sys.executable]
RUNTIMES = {"micropython": MICROPYTHON_FIRMWARE, "cpython": CPYTHON}
# The ROMFS form (tools/romfs.py: the image mounted at /rom, bytecode run in place) at the heap the
# issue-12 diet reached, the images' own bytes (431 KB for the firmware's image since voice, the web app and
# small-board mode joined it, 28 KB more than with MCP and the rules; the stand-ins' 13 KB) and the runner
# included: on the unix port they sit in the heap. The standard 10-turn chat completes at 632K (BENCHMARKS.md);
# the e2e core scenarios run at 800K (736K before the image grew: a rule made by chat then ran out; at 768K a
# temperature rule's console line found no 2 KB hole) and the
# Telegram ones at 896K (a long reply is split from its pieces, never joined whole): the order of network
# events moves the heap's holes, so a step of margin. 928K since the image grew 16 KB (issues 41 and 42: 508 KB
# of images): CI's checkout failed the rules' Telegram scenario at 896K on the tree before them (it passed at
# 896K here, failed at 864K; it now passes at 864K and fails at 832K, the heap then full). 832K and 960K since the
# image grew 9.6 KB (issue 44: windows, find_tools, the tool search tool; 505 -> 515 KB): the watcher scenario of
# test_models.py, which passed at 800K and failed at 784K before, then failed at 800K and 816K (the same heap held
# by the firmware itself after each step, heap_info: only the image's bytes moved) and passed at 832K. 872K and
# 1000K since the image grew 38 KB (issue 45: Matrix and Discord, 515 -> 538 KB of firmware image; the chat apps'
# code is in the image, loaded only once configured): the watcher and confirmation scenarios of test_models.py, a
# door rule's and the small-model window's failed at 832K / 960K, the firmware's own heap unchanged (ROMFS idle
# +0.8 KB, bench/heap_budget.json). A memory regression past these fails a test.
ROMFS_MP_HEAP = os.environ.get("MIMI_ROMFS_MP_HEAP", "872K")
ROMFS_TELEGRAM_MP_HEAP = os.environ.get("MIMI_ROMFS_TELEGRAM_MP_HEAP", "1000K")
_ROMFS_COMMANDS = []


def romfs_runtime(heap):
    """The interpreter command of a ROMFS-form firmware at this heap (Device adds --romfs for it)."""
    cmd = [MICROPYTHON[0], "-X", "heapsize=" + heap]
    _ROMFS_COMMANDS.append(cmd)
    return cmd


def is_romfs(cmd):
    return any(cmd is known for known in _ROMFS_COMMANDS)


MICROPYTHON_ROMFS = romfs_runtime(ROMFS_MP_HEAP)
RUNTIMES_WITH_ROMFS = dict(RUNTIMES, romfs=MICROPYTHON_ROMFS)
RUNTIMES_WITH_ROMFS_TELEGRAM = dict(RUNTIMES, romfs=romfs_runtime(ROMFS_TELEGRAM_MP_HEAP))
# Small-board mode's Telegram scenario over TLS (tests/e2e/test_small_board.py) in the ROMFS form at the soak's
# heap: the bench's smallest for the mode (BENCHMARKS.md, "All the RAM, TLS counted": 960K on the PyPI port,
# where the boot can intern every module's names) + 15 %. The scenario's own edge is near 992K (at 960K its boot
# found no block for the names after 14 modules; the chat alone passed at 752K-800K). mbedTLS is outside this
# heap on the PyPI port.
SMALL_BOARD_MP_HEAP = os.environ.get("MIMI_SMALL_BOARD_MP_HEAP", "1032K")
SMALL_BOARD_RUNTIMES = dict(RUNTIMES, romfs=romfs_runtime(SMALL_BOARD_MP_HEAP))

# Under MicroPython the end-to-end tests run the compiled bundle (`make bundle`: what ships to the
# board) rather than the .py sources; MIMI_MP_SOURCE=1 runs the sources instead.
_built = []


def micropython_firmware():
    """--firmware arguments for a MicroPython firmware process (the bundle is built once per run)."""
    if os.environ.get("MIMI_MP_SOURCE"):
        return []
    if not _built:
        import atexit
        import shutil
        import subprocess
        import tempfile

        # One bundle per test run, in its own folder: two runs side by side never share one.
        bundle = tempfile.mkdtemp(prefix="mimi-test-bundle-")
        atexit.register(shutil.rmtree, bundle, True)
        done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "bundle.py"), "--out", bundle],
                              cwd=ROOT, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError("tools/bundle.py failed:\n" + done.stdout[-2000:] + done.stderr[-2000:])
        _built.append(bundle)
    return ["--firmware", os.path.join(_built[0], "lib")]


_image = []


def romfs_firmware(flash):
    """--romfs arguments for a firmware on this flash: its romfs partition (a file beside the flash folder,
    kept across reboots) starts as the image tools/romfs.py builds once per test run; the stand-ins run
    from their own image (host_sim/standins_rom.py)."""
    import shutil
    import subprocess

    if not _image:
        import atexit
        import tempfile

        folder = tempfile.mkdtemp(prefix="mimi-test-romfs-")
        atexit.register(shutil.rmtree, folder, True)
        image = os.path.join(folder, "romfs.img")
        done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "romfs.py"), "build", "--out", image],
                              cwd=ROOT, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError("tools/romfs.py failed:\n" + done.stdout[-2000:] + done.stderr[-2000:])
        _image.append(image)
        from host_sim import standins_rom  # the chip's built-in modules run in place too, as C from flash there

        _image.append(standins_rom.build(os.path.join(folder, "standins-romfs.img"), ROOT))
    partition = str(flash).rstrip("/") + "-romfs.bin"
    if not os.path.exists(partition):
        shutil.copyfile(_image[0], partition)
    return ["--romfs", partition, "--standins-rom", _image[1]]
