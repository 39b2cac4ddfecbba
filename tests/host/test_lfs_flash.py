# The runner's LittleFS flash: an image one runtime writes, the other reads; the CPython shim acts like VfsLfs2.
import json
import subprocess
import sys

from host_sim import lfs_flash
from tests.runtimes import MICROPYTHON, ROOT

SIZE = 128 * 1024

# Under MicroPython: mount the image as the runner does, list every file with its bytes, then write.
MP_SCRIPT = """
import json, os, sys
sys.path.insert(0, "host_sim")
import lfs_flash
print(lfs_flash.mount(sys.argv[1], int(sys.argv[2])))
def walk(folder, found):
    for name, kind, *_ in os.ilistdir(folder):
        path = folder + "/" + name
        if kind == 0x4000:
            walk(path, found)
        else:
            with open(path, "rb") as f:
                found[path[len(lfs_flash.MOUNT) + 1:]] = f.read().decode()
found = {}
walk(lfs_flash.MOUNT, found)
os.mkdir(lfs_flash.MOUNT + "/from_mp")
with open(lfs_flash.MOUNT + "/from_mp/note.txt", "w") as f:
    f.write("written by micropython \\u00e9")
try:
    os.mkdir(lfs_flash.MOUNT + "/data")
except OSError:
    pass  # there already
with open(lfs_flash.MOUNT + "/data/log.jsonl", "ab") as f:
    f.write(b'{"n":2}\\n')
print(json.dumps(found))
"""


def _micropython(image, size=SIZE):
    out = subprocess.run(MICROPYTHON + ["-c", MP_SCRIPT, str(image), str(size)], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    first, listing = out.stdout.strip().split("\n")[-2:]
    return first, json.loads(listing)


def test_an_image_written_under_cpython_is_read_and_extended_under_micropython_and_back(tmp_path):
    image = tmp_path / "flash.img"
    lfs_flash.put_files(str(image), SIZE, {"data/config/SOUL.md": "# Mimi \u00e9\n".encode(),
                                           "data/log.jsonl": b'{"n":1}\n', "tools/": None})
    said, seen = _micropython(image)
    assert said.endswith(": mounted")  # MicroPython's VfsLfs2 mounted it as it is, no reformat
    assert seen == {"data/config/SOUL.md": "# Mimi \u00e9\n", "data/log.jsonl": '{"n":1}\n'}
    back = lfs_flash.image_files(str(image))
    assert back == {"data/config/SOUL.md": "# Mimi \u00e9\n".encode(), "data/log.jsonl": b'{"n":1}\n{"n":2}\n',
                    "from_mp/note.txt": "written by micropython \u00e9".encode()}


def test_a_new_image_is_sized_and_formatted_and_a_garbage_one_is_formatted_with_a_warning(tmp_path):
    image = tmp_path / "new.img"
    said, seen = _micropython(image, 64 * 1024)
    assert said.endswith(": new image, formatted") and "16 blocks of 4096 bytes" in said and seen == {}
    assert image.stat().st_size == 64 * 1024
    assert lfs_flash.image_files(str(image)) == {"from_mp/note.txt": "written by micropython \u00e9".encode(),
                                                 "data/log.jsonl": b'{"n":2}\n'}
    garbage = tmp_path / "garbage.img"
    garbage.write_bytes(b"\x00" * SIZE)
    said, seen = _micropython(garbage)
    assert said.endswith(": image did not mount: formatted")


SHIM_SCRIPT = """
import os, sys
sys.path.insert(0, "host_sim")
import lfs_flash
lfs_flash.mount(sys.argv[1], 64 * 1024)
m = lfs_flash.MOUNT
os.mkdir(m + "/tools")
with open(m + "/tools/tool_hello.py", "w") as f:
    f.write("GREETING = 'hello from the image'\\n")
sys.path.append(m + "/tools")
import tool_hello
print(tool_hello.GREETING)
with open(m + "/a.txt", "wb") as f:
    f.write(b"old")
with open(m + "/a.txt.tmp", "wb") as f:
    f.write(b"new")
os.rename(m + "/a.txt.tmp", m + "/a.txt")
print(sorted(os.listdir(m)), open(m + "/a.txt").read(), os.stat(m + "/a.txt")[6], os.stat(m + "/tools")[0] & 0x4000)
st = os.statvfs(m)
print(st[0], st[2], 0 < st[4] < st[2])
try:
    os.stat(m + "/missing")
except OSError as exc:
    print("missing", exc.args[0])
os.remove(m + "/a.txt")
print(sorted(os.listdir(m)))
"""


def test_the_cpython_shim_behaves_as_micropython_vfs_for_the_calls_the_firmware_makes(tmp_path):
    outputs = []
    for runtime in (MICROPYTHON, [sys.executable]):
        image = tmp_path / "shim{}.img".format(len(outputs))
        out = subprocess.run(runtime + ["-c", SHIM_SCRIPT, str(image)], cwd=ROOT, capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr
        outputs.append(out.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0] == ("hello from the image\n['a.txt', 'tools'] new 3 16384\n4096 16 True\nmissing 2\n"
                          "['tools']\n")
