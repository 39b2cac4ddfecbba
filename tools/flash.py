#!/usr/bin/env python3
"""`make flash PORT=... FIRMWARE=...` and `make erase PORT=...`: esptool v5 on the ESP32-S3.

flash writes a MicroPython image and keeps the board's settings and files:
  - a full image (MicroPython's firmware.bin: bootloader at 0x0, partition table at 0x8000, app at
    the first app partition; what micropython.org publishes and `make firmware` builds) is written
    as two pieces, bootloader + table at 0x0 and the app at its slot. Writing the whole file at 0x0
    would also write the 0xff padding between table and app over nvs (the settings) and otadata;
  - an app image alone (micropython.bin) is written at the first app slot of partitions.csv.
  otadata is erased (when the table has one) so the bootloader boots the app just written, not an
  older one an OTA update left in the other slot. nvs, phy_init and vfs (every file, /data with
  the owner's memory and sessions) are not touched.
erase wipes the whole flash: firmware, settings and files.
Before writing or erasing anything, `esptool flash-id` asks the board what it is. When nothing
answers, another chip does, or its flash is smaller than the partition table to be written, it
stops there with one line, the board untouched. PORT is a serial port (/dev/ttyACM0) or a
socket:// URL (`make mock-board`: an emulated ESP32-S3, to try this without a board).
Every command is printed; $ESPTOOL replaces the venv's esptool (a test gives an esptool v4).
"""
import argparse
import collections
import os
import re
import struct
import sys

import partition_table  # tools/, beside this file
import serial_board

CHIP = "esp32s3"
CHIP_IDS = {0: "esp32", 2: "esp32s2", 5: "esp32c3", 9: "esp32s3", 12: "esp32c2", 13: "esp32c6",
            16: "esp32h2", 18: "esp32p4"}  # esp_image_header_t.chip_id
S3_CHIP_ID = 9
IMAGE_MAGIC = 0xE9
CHIP_ID_OFFSET = 12  # after magic, segments, flash mode, size/freq, entry (4), wp pin, drive (3)
TABLE_ENTRY = struct.Struct("<2sBBII16sI")  # magic, type, subtype, offset, size, label, flags
TABLE_MAGIC = b"\xaa\x50"
TABLE_MAX_SIZE = 0xC00  # ESP-IDF's limit for the table, MD5 entry included
APP_TYPE = 0
OTADATA = (1, 0)  # data, ota
ESPTOOL_MAJOR = 5  # write-flash / erase-flash spellings
WORK_DIR = os.path.join(serial_board.ROOT, "build", "flash")

FLASH_SIZE_LINE = re.compile(r"Detected flash size: (\d+)([KM])B")
WRONG_CHIP = re.compile(r"This chip is ([\w-]+), not ([\w-]+)")
FATAL = "A fatal error occurred: "

Piece = collections.namedtuple("Piece", "offset path what data")  # data: saved at path, or None
# What to write, otadata (or None), notes to print, and the table the board reads: its end, name.
Plan = collections.namedtuple("Plan", "pieces otadata notes table_end table_name")


def esptool():
    return serial_board.tool("ESPTOOL", "esptool")


def on_board(port):
    return esptool() + ["--chip", CHIP, "--port", port]


def check_version():
    result = serial_board.run(esptool() + ["version"], capture=True)
    sys.stdout.write(result.stdout)
    found = re.search(r"(\d+)\.\d+", result.stdout or "")
    if result.returncode != 0 or not found:
        sys.exit("flash: `esptool version` failed: {}".format(
            serial_board.last_line(result.stderr or result.stdout)))
    if int(found.group(1)) < ESPTOOL_MAJOR:
        sys.exit("flash: esptool {} found; these commands are esptool v5's (write-flash, "
                 "erase-flash): `.venv/bin/pip install 'esptool>=5'`".format(found.group(0)))


def read_image(path):
    """The image's bytes, if it is an ESP32-S3 image; SystemExit otherwise."""
    if not path:
        sys.exit("flash: no FIRMWARE given: make flash PORT=/dev/ttyACM0 FIRMWARE=firmware.bin "
                 "(MicroPython for ESP32_GENERIC_S3 from micropython.org, or build/firmware/"
                 "firmware.bin from `make firmware`)")
    if not os.path.isfile(path):
        sys.exit("flash: FIRMWARE={} does not exist".format(path))
    with open(path, "rb") as f:
        image = f.read()
    if len(image) < CHIP_ID_OFFSET + 2 or image[0] != IMAGE_MAGIC:
        sys.exit("flash: {} is not an ESP32 firmware image (it does not start with 0x{:02x})"
                 .format(path, IMAGE_MAGIC))
    chip_id = struct.unpack_from("<H", image, CHIP_ID_OFFSET)[0]
    if chip_id != S3_CHIP_ID:
        sys.exit("flash: {} is built for {}, not for the {}".format(
            path, CHIP_IDS.get(chip_id, "chip id {}".format(chip_id)), CHIP))
    return image


def image_table(image):
    """The partition table inside a full image, or None for an app image alone."""
    start = partition_table.TABLE_OFFSET
    parts = []
    for pos in range(start, start + TABLE_MAX_SIZE, TABLE_ENTRY.size):
        if len(image) < pos + TABLE_ENTRY.size:
            break
        magic, ptype, subtype, offset, size, label, _flags = TABLE_ENTRY.unpack_from(image, pos)
        if magic != TABLE_MAGIC:
            break  # 0xebeb (MD5 entry) or 0xffff (end)
        name = label.rstrip(b"\0").decode("ascii", "replace")
        parts.append(partition_table.Partition(name, ptype, subtype, offset, size, ""))
    return parts or None


def table_differences(image_parts, csv_parts):
    """Lines naming each partition placed differently in the image than in partitions.csv."""
    mine = dict((p.name, (p.offset, p.size)) for p in csv_parts)
    theirs = dict((p.name, (p.offset, p.size)) for p in image_parts)
    lines = []
    for name in sorted(set(mine) | set(theirs)):
        if mine.get(name) != theirs.get(name):
            lines.append("  {:<9} image: {:<22} partitions.csv: {}".format(
                name, _place(theirs.get(name)), _place(mine.get(name))))
    return lines


def _place(where):
    return "{:#x}, {:#x} bytes".format(*where) if where else "-"


def plan(image, firmware, csv_parts, csv_name):
    """What writing this image takes (Plan); nothing is written yet."""
    parts = image_table(image)
    if parts is None:
        slot = next(p for p in csv_parts if p.type == "app")
        if len(image) > slot.size:
            sys.exit("flash: {} ({} bytes) does not fit the {} slot ({} bytes)".format(
                firmware, len(image), slot.name, slot.size))
        otadata = next((p for p in csv_parts if p.type == "data" and p.subtype == "ota"), None)
        return Plan([Piece(slot.offset, firmware, "app -> " + slot.name, None)], otadata, [],
                    table_end(csv_parts), csv_name)
    app = next((p for p in parts if p.type == APP_TYPE), None)
    if app is None or len(image) <= app.offset:
        sys.exit("flash: {} has a partition table but no app after it".format(firmware))
    if len(image) - app.offset > app.size:
        sys.exit("flash: the app in {} ({} bytes) does not fit its {} slot ({} bytes)".format(
            firmware, len(image) - app.offset, app.name, app.size))
    first_partition = min(p.offset for p in parts)
    stem = os.path.join(WORK_DIR, os.path.splitext(os.path.basename(firmware))[0])
    pieces = [Piece(0, stem + ".boot.bin", "bootloader + partition table",
                    image[:first_partition]),
              Piece(app.offset, stem + ".app.bin", "app -> " + app.name, image[app.offset:])]
    otadata = next((p for p in parts if (p.type, p.subtype) == OTADATA), None)
    notes = table_differences(parts, csv_parts)
    if notes:
        notes = (["the image's partition table is not {}'s; where they differ, "
                  "what the board held there is no longer found (a moved vfs is formatted "
                  "empty: copy your /data off first with mpremote):".format(csv_name)] + notes)
    return Plan(pieces, otadata, notes, table_end(parts),
                "the partition table in " + os.path.basename(firmware))


def table_end(parts):
    return max(p.offset + p.size for p in parts)


def _megabytes(size):
    return "{}MB".format(size // (1024 * 1024)) if size % (1024 * 1024) == 0 else \
        "{}KB".format(size // 1024)


def probe(who, port, undone):
    """The flash size (bytes, None if not detected) of the ESP32-S3 answering on port.

    Exits with one line when nothing answers or another chip does; `undone` ends that line
    ("nothing was written"), since nothing was.
    """
    result = serial_board.run(on_board(port) + ["flash-id"], capture=True)
    text = (result.stdout or "") + (result.stderr or "")
    wrong = WRONG_CHIP.search(text)
    if wrong:
        sys.exit("{}: the board on {} is an {}, not an {}: MimiClaw runs on the ESP32-S3 only; "
                 "{}".format(who, port, wrong.group(1), wrong.group(2), undone))
    if result.returncode != 0:
        sys.exit("{}: no board answered on {} (esptool: {}). Is another program using the port? "
                 "If the board does not enter its bootloader, hold BOOT, press RESET, release "
                 "BOOT and try again; {}".format(who, port, _fatal(text), undone))
    found = FLASH_SIZE_LINE.search(text)
    if not found:
        print("{}: esptool did not detect the flash size; not checked".format(who))
        return None
    size = int(found.group(1)) * (1024 if found.group(2) == "K" else 1024 * 1024)
    print("{}: an ESP32-S3 with {} of flash answered on {}".format(who, _megabytes(size), port))
    return size


def _fatal(text):
    """esptool's error, without its prefix (the line after it too: it gives the cause)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if FATAL in line:
            return " ".join([line.split(FATAL, 1)[1]] + lines[i + 1:i + 2])
    return serial_board.last_line(text)


def flash(port, firmware, partitions):
    serial_board.require_port("flash", port, "make flash PORT=/dev/ttyACM0 FIRMWARE=firmware.bin")
    image = read_image(firmware)
    todo = plan(image, firmware, partition_table.read(partitions), os.path.basename(partitions))
    check_version()
    size = probe("flash", port, "nothing was written")
    if size is not None and todo.table_end > size:
        sys.exit("flash: the board on {} has {} of flash; {} needs {}: on an 8 MB board use "
                 "PARTITIONS=partitions-8MiB.csv and firmware built for it; nothing was written"
                 .format(port, _megabytes(size), todo.table_name, _megabytes(todo.table_end)))
    for note in todo.notes:
        print("flash: " + note if not note.startswith("  ") else note)
    for piece in todo.pieces:
        if piece.data is not None:
            os.makedirs(WORK_DIR, exist_ok=True)
            with open(piece.path, "wb") as f:
                f.write(piece.data)
        print("flash: {:#x} {} ({})".format(piece.offset, serial_board.shown(piece.path),
                                           piece.what))
    print("flash: nvs (settings), phy_init and vfs (files, /data included) are not written")
    if todo.otadata:
        print("flash: erasing otadata so the board boots the app just written")
        _esptool("flash", port, ["erase-region", hex(todo.otadata.offset),
                                 hex(todo.otadata.size)])
    args = ["write-flash"]
    for piece in todo.pieces:
        args += [hex(piece.offset), piece.path]
    _esptool("flash", port, args)
    print("flash: done; the board restarts into the new firmware")


def erase(port):
    serial_board.require_port("erase", port, "make erase PORT=/dev/ttyACM0")
    check_version()
    probe("erase", port, "nothing was erased")
    print("erase: this wipes the WHOLE flash: firmware, settings (nvs) and every file, the "
          "owner's memory and sessions in /data included. Flash firmware again afterwards.")
    _esptool("erase", port, ["erase-flash"])


def _esptool(who, port, args):
    result = serial_board.run(on_board(port) + args)
    if result.returncode != 0:
        sys.exit("{}: esptool stopped part-way on {} (exit status {}; its message is above): run "
                 "`make {}` again, it does every step again".format(
                     who, port, result.returncode, who))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("flash", "erase"))
    parser.add_argument("--port", default="")
    parser.add_argument("--firmware", default="")
    parser.add_argument("--partitions", default=os.path.join(serial_board.ROOT, "partitions.csv"))
    args = parser.parse_args(argv)
    if args.action == "erase":
        erase(args.port)
    else:
        flash(args.port, args.firmware, args.partitions)


if __name__ == "__main__":
    main()
