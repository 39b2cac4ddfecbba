#!/usr/bin/env python3
"""`make fsimage`: a LittleFS image of the `vfs` partition, holding the bundle and default files.

The image (build/fs.bin) is what MicroPython mounts at / : the bundle (run `make bundle`
first) as it is, plus /data as the firmware's first boot leaves it (its folders, and SOUL.md,
USER.md and MEMORY.md with the firmware's defaults), so the board boots on it as it is. Flashing
it REPLACES the whole file system, the owner's memory and sessions included: it is for a new
board or a deliberate reset. To update the code on a board in use, deploy the bundle instead.
"""
import argparse
import os
import sys

import littlefs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "firmware"))
sys.path.insert(0, os.path.join(ROOT, "host_sim", "standins"))  # esp32, machine, network

import partition_table  # noqa: E402  (tools/, beside this file)
from mimi.storage import layout  # noqa: E402

BLOCK_SIZE = 4096  # one flash sector: esp32.Partition's block size
# As MicroPython's VfsLfs2 formats (extmod/vfs_lfs.c defaults), so the board keeps using it as is.
READ_SIZE = 32
PROG_SIZE = 32
LOOKAHEAD_SIZE = 32
BLOCK_CYCLES = 100
DISK_VERSION = 0x00020000  # on-disk format 2.0: readable by every MicroPython with LittleFS v2
DATA = layout.Flash("data")  # mimi.app.DATA_ROOT without the leading slash: what its seed() makes
DEFAULT_FILES = ((DATA.soul_path, layout.DEFAULT_SOUL), (DATA.user_path, layout.DEFAULT_USER),
                 (DATA.memory_path, layout.DEFAULT_MEMORY))


def shown(path):
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel


def bundle_files(bundle):
    """(path in the image, path on disk) of every file in the bundle, sorted."""
    found = []
    for folder, dirs, names in os.walk(bundle):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(folder, name)
            found.append((os.path.relpath(path, bundle).replace(os.sep, "/"), path))
    return found


def make_dirs(fs, path, made):
    parts = path.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        folder = "/".join(parts[:i])
        if folder not in made:
            fs.mkdir(folder)
            made.add(folder)


def build_image(bundle, size):
    """The image as bytes, and the number of files in it."""
    if size % BLOCK_SIZE:
        sys.exit("fsimage: the size must be a multiple of {} bytes".format(BLOCK_SIZE))
    fs = littlefs.LittleFS(block_size=BLOCK_SIZE, block_count=size // BLOCK_SIZE,
                           read_size=READ_SIZE, prog_size=PROG_SIZE,
                           lookahead_size=LOOKAHEAD_SIZE, block_cycles=BLOCK_CYCLES,
                           disk_version=DISK_VERSION)
    contents = []
    for rel, path in bundle_files(bundle):
        with open(path, "rb") as f:
            contents.append((rel, f.read()))
    for rel, text in DEFAULT_FILES:
        contents.append((rel, text.encode()))
    made = set()
    try:
        for folder in DATA.folders():
            make_dirs(fs, folder + "/", made)
        for rel, data in contents:
            make_dirs(fs, rel, made)
            with fs.open(rel, "wb") as f:
                f.write(data)
    except littlefs.LittleFSError as exc:
        sys.exit("fsimage: cannot write {} into a {} byte image: {}".format(rel, size, exc))
    return bytes(fs.context.buffer), len(contents)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", default=os.path.join(ROOT, "partitions.csv"))
    parser.add_argument("--bundle", default=os.path.join(ROOT, "build", "bundle"))
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "fs.bin"))
    parser.add_argument("--size", type=partition_table.parse_number,
                        help="image size (default: the vfs partition's); a smaller one is for "
                             "tests and must not be flashed")
    parser.add_argument("--port", default="PORT", help="serial port shown in the flash command")
    args = parser.parse_args()
    if not os.path.exists(os.path.join(args.bundle, "manifest.json")):
        sys.exit("fsimage: no bundle in {}; run `make bundle` first".format(shown(args.bundle)))
    vfs = partition_table.find(partition_table.read(args.partitions), "vfs")
    size = args.size or vfs.size
    print("fsimage: LittleFS v2, {} blocks of {} bytes, from {}".format(
        size // BLOCK_SIZE, BLOCK_SIZE, shown(args.bundle)))
    image, count = build_image(args.bundle, size)
    out = os.path.abspath(args.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "wb") as f:
        f.write(image)
    print("fsimage: wrote {} ({} bytes, {} files)".format(shown(out), len(image), count))
    if size != vfs.size:
        print("fsimage: {} bytes is not the vfs partition's {}: MicroPython would reformat it; "
              "do not flash this image".format(size, vfs.size))
        return
    print("Flash it (REPLACES the board's files, memory and sessions included):")
    print("  esptool --chip esp32s3 --port {} write-flash {:#x} {}".format(
        args.port, vfs.offset, shown(out)))


if __name__ == "__main__":
    main()
