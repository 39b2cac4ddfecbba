# `make fsimage`: MicroPython's own VfsLfs2 mounts the image and finds the bundle and the defaults.
import hashlib
import json
import os
import subprocess
import sys

from tests.runtimes import MICROPYTHON

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for _p in ("firmware", "host_sim/standins"):
    _full = os.path.join(ROOT, _p)
    if _full not in sys.path:
        sys.path.insert(0, _full)

from mimi.storage import layout  # noqa: E402
TOOLS = os.path.join(ROOT, "tools")
IMAGE_SIZE = 2 * 1024 * 1024  # smaller than the vfs partition: room for the bundle (a block a file) and /data
BLOCK_SIZE = 4096

# A file-backed block device (the extended interface LittleFS uses) and a walk of the image
# that prints {path: sha256} as JSON; then proof the board can go on writing to it.
READ_BACK = """
import binascii, hashlib, json, sys, vfs

class FileBlocks:
    def __init__(self, path, block_size):
        self.f = open(path, "r+b")
        self.block_size = block_size
        self.f.seek(0, 2)
        self.count = self.f.tell() // block_size

    def readblocks(self, n, buf, offset=0):
        self.f.seek(n * self.block_size + offset)
        self.f.readinto(buf)

    def writeblocks(self, n, buf, offset=0):
        self.f.seek(n * self.block_size + offset)
        self.f.write(buf)

    def ioctl(self, op, arg):
        if op == 4:  # block count
            return self.count
        if op == 5:  # block size
            return self.block_size
        if op == 6:  # erase a block: LittleFS needs nothing done
            return 0
        if op == 3:  # sync
            self.f.flush()
            return 0
        return None

def walk(fs, folder, found):
    for entry in fs.ilistdir(folder):
        path = folder.rstrip("/") + "/" + entry[0]
        if entry[1] == 0x4000:
            walk(fs, path, found)
        else:
            h = hashlib.sha256()
            with fs.open(path, "rb") as f:
                while True:  # in pieces, as a board reads a file: the manifest alone is about 20 KB
                    piece = f.read(4096)
                    if not piece:
                        break
                    h.update(piece)
            found[path[1:]] = binascii.hexlify(h.digest()).decode()

bdev = FileBlocks(sys.argv[1], int(sys.argv[2]))
fs = vfs.VfsLfs2(bdev)
found = {}
walk(fs, "/", found)
with fs.open("/data/memory.md", "w") as f:
    f.write("written by the board")
with fs.open("/data/memory.md", "r") as f:
    written = f.read()
for path in found:  # a line each: the whole as one JSON string would need a 15 KB block of the 512K heap
    print("file", path, found[path])
print("blocks", fs.statvfs("/")[2])
print("written", json.dumps(written))
"""


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def run(cmd):
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_micropython_mounts_the_image_and_reads_back_every_file(tmp_path):
    bundle = tmp_path / "bundle"
    image = tmp_path / "fs.bin"
    run([sys.executable, os.path.join(TOOLS, "bundle.py"), "--out", str(bundle)])
    made = run([sys.executable, os.path.join(TOOLS, "fsimage.py"), "--bundle", str(bundle),
                "--out", str(image), "--size", str(IMAGE_SIZE)])
    assert image.stat().st_size == IMAGE_SIZE
    assert "do not flash" in made.stdout  # a test-sized image is never offered for flashing
    script = tmp_path / "read_back.py"
    script.write_text(READ_BACK)
    shown = run(MICROPYTHON + [str(script), str(image), str(BLOCK_SIZE)])
    seen = {"files": {}}
    for line in shown.stdout.splitlines():
        kind, rest = line.split(" ", 1)
        if kind == "file":
            path, digest = rest.rsplit(" ", 1)
            seen["files"][path] = digest
        else:
            seen[kind] = json.loads(rest)
    manifest = json.loads((bundle / "manifest.json").read_text())
    expected = {path: entry["sha256"] for path, entry in manifest.items()}
    expected["manifest.json"] = sha256((bundle / "manifest.json").read_bytes())
    expected["data/config/SOUL.md"] = sha256(layout.DEFAULT_SOUL.encode())
    expected["data/config/USER.md"] = sha256(layout.DEFAULT_USER.encode())
    expected["data/memory/MEMORY.md"] = sha256(layout.DEFAULT_MEMORY.encode())
    assert seen["files"] == expected
    assert seen["blocks"] == IMAGE_SIZE // BLOCK_SIZE
    assert seen["written"] == "written by the board"


def test_full_size_image_is_offered_at_the_vfs_offset(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "manifest.json").write_text("{}\n")
    image = tmp_path / "fs.bin"
    made = run([sys.executable, os.path.join(TOOLS, "fsimage.py"), "--bundle", str(bundle),
                "--out", str(image), "--partitions", os.path.join(ROOT, "partitions-8MiB.csv")])
    assert image.stat().st_size == 0x230000  # after the romfs partition
    assert "write-flash 0x5d0000 " in made.stdout


def test_fsimage_asks_for_the_bundle_first(tmp_path):
    result = subprocess.run([sys.executable, os.path.join(TOOLS, "fsimage.py"), "--bundle",
                             str(tmp_path / "none")], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode != 0
    assert "make bundle" in result.stderr
