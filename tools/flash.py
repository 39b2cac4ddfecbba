#!/usr/bin/env python3
"""`make flash PORT=... FIRMWARE=...` and `make erase PORT=...`: esptool v5 on the ESP32-S3.

flash writes a MicroPython image and keeps the board's settings and files:
  - a full image (MicroPython's firmware.bin: bootloader at 0x0, partition table at 0x8000, app at
    the first app partition; what micropython.org publishes and `make firmware` builds) is written
    as three pieces: the image's bootloader at 0x0, our partition table (PARTITIONS, partitions.csv
    by default: the one `make fsimage`, `make romfs` and `make provision` print offsets for) at
    0x8000 whatever table the image carries (MicroPython's own has no romfs or OTA slot and its vfs
    elsewhere), and the image's app at our first app slot; the bootloader's header is given the
    board's flash size, so the firmware sees all of the table. Writing the whole file at 0x0 would
    also write the 0xff padding between table and app over nvs (the settings) and otadata;
  - an app image alone (micropython.bin) is written at the first app slot of partitions.csv.
  otadata is erased (when our table has one) so the bootloader boots the app just written, not an
  older one an OTA update left in the other slot. nvs, phy_init, romfs and vfs (every file, /data
  with the owner's memory and sessions) are not touched.
erase wipes the whole flash: firmware, settings and files.
Before writing or erasing anything, `esptool flash-id` asks the board what it is. When nothing
answers, another chip does, its flash is smaller than the partition table to be written, the app
is larger than its slot, or (a full image) the board's own table has its vfs elsewhere (its files
would be lost), it stops there with one line, the board untouched. PORT is a serial port
(/dev/ttyACM0) or a socket:// URL (`make mock-board`: an emulated ESP32-S3, to try this without a
board).
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
FLASH_SIZE_OFFSET = 3  # the header's size/freq byte: the flash size in its high nibble
FLASH_SIZES = ("1MB", "2MB", "4MB", "8MB", "16MB", "32MB", "64MB", "128MB")  # by that nibble
FILES = ("vfs", "ffat")  # the labels MicroPython mounts its file system from (flashbdev.py)
ESPTOOL_MAJOR = 5  # write-flash / erase-flash spellings
WORK_DIR = os.path.join(serial_board.ROOT, "build", "flash")

FLASH_SIZE_LINE = re.compile(r"Detected flash size: (\d+)([KM])B")
WRONG_CHIP = re.compile(r"This chip is ([\w-]+), not ([\w-]+)")
FATAL = "A fatal error occurred: "

Piece = collections.namedtuple("Piece", "offset path what data")  # data: saved at path, or None
# What to write, otadata (or None), notes to print, and whether it is a full image.
Plan = collections.namedtuple("Plan", "pieces otadata notes full")


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
    return partition_table.from_binary(image[start:start + partition_table.TABLE_MAX])


def table_differences(theirs, mine, whose, csv_name):
    """Lines naming each partition placed differently in `theirs` (whose: "board", "image") than
    in ours."""
    mine = dict((p.name, (p.offset, p.size)) for p in mine)
    theirs = dict((p.name, (p.offset, p.size)) for p in theirs)
    lines = []
    for name in sorted(set(mine) | set(theirs)):
        if mine.get(name) != theirs.get(name):
            lines.append("  {:<9} {}: {:<22} {}: {}".format(
                name, whose, _place(theirs.get(name)), csv_name, _place(mine.get(name))))
    return lines


def _place(where):
    return "{:#x}, {:#x} bytes".format(*where) if where else "-"


def plan(image, firmware, csv_parts, csv_name):
    """What writing this image takes (Plan); nothing is written yet. Exits with one line when it
    cannot be written."""
    slot = next((p for p in csv_parts if p.type == "app"), None)
    if slot is None:
        sys.exit("flash: {} has no app partition; nothing was written".format(csv_name))
    otadata = next((p for p in csv_parts if (p.type, p.subtype) == ("data", "ota")), None)
    parts = image_table(image)
    if parts is None:
        app, what = image, firmware
        pieces = [Piece(slot.offset, firmware, "app -> " + slot.name, None)]
        notes = []
    else:
        theirs = next((p for p in parts if p.type == "app"), None)
        if theirs is None or len(image) <= theirs.offset:
            sys.exit("flash: {} has a partition table but no app after it; nothing was written"
                     .format(firmware))
        app, what = image[theirs.offset:], "the app in " + firmware
        try:
            table = partition_table.binary(csv_parts)
        except ValueError as e:
            sys.exit("flash: {}: {}; nothing was written".format(csv_name, e))
        stem = os.path.join(WORK_DIR, os.path.splitext(os.path.basename(firmware))[0])
        start = partition_table.TABLE_OFFSET
        pieces = [Piece(0, stem + ".bootloader.bin", "bootloader, the image's", image[:start]),
                  Piece(start, stem + ".partitions.bin", "partition table, " + csv_name, table),
                  Piece(slot.offset, stem + ".app.bin", "app -> " + slot.name, app)]
        notes = []
        if table_differences(parts, csv_parts, "image", csv_name):
            where = ", ".join("{} {:#x}".format(p.name, p.offset) for p in parts)
            notes = ["the image's own partition table ({}) is not written: the board gets {}'s"
                     .format(where, csv_name)]
    if len(app) > slot.size:
        sys.exit("flash: {} ({} bytes) is larger than {}'s first app slot, {} ({} bytes); nothing "
                 "was written".format(what, len(app), csv_name, slot.name, slot.size))
    return Plan(pieces, otadata, notes, parts is not None)


def table_end(parts):
    return max(p.offset + p.size for p in parts)


def header_flash_size(image):
    """The flash size an image's header says ("8MB"), or None."""
    return dict(enumerate(FLASH_SIZES)).get(image[FLASH_SIZE_OFFSET] >> 4)


def board_table(port):
    """The partition table the board holds now (Partition records), or None when it holds none."""
    os.makedirs(WORK_DIR, exist_ok=True)
    path = os.path.join(WORK_DIR, "board-partitions.bin")
    _esptool("flash", port, ["read-flash", hex(partition_table.TABLE_OFFSET),
                             hex(partition_table.TABLE_MAX), path],
             "reading the board's partition table failed; nothing was written")
    with open(path, "rb") as f:
        return partition_table.from_binary(f.read())


def moved_files(board, csv_parts, csv_name, port):
    """The refusal (one line) when the board's file system is elsewhere in our table: its files
    would be lost. None when it is where our table has it, or the board has none."""
    mine = next((p for p in csv_parts if p.name == "vfs"), None)
    for theirs in (p for p in board if p.name in FILES):
        if mine is None or (theirs.offset, theirs.size) != (mine.offset, mine.size):
            return ("flash: the board's partition table has its {} (the board's files, /data "
                    "included) at {:#x} ({:#x} bytes), {} at {}: flashing would lose those files; "
                    "copy /data off with mpremote first if you want it, then `make erase PORT={}` "
                    "(the whole flash, settings too) and `make flash` again; nothing was written"
                    .format(theirs.name, theirs.offset, theirs.size, csv_name, _at(mine), port))
    return None


def _at(part):
    return "{:#x} ({:#x} bytes)".format(part.offset, part.size) if part else "none"


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
    csv_name = os.path.basename(partitions)
    try:
        csv_parts = partition_table.read(partitions)
    except (OSError, ValueError) as e:
        sys.exit("flash: PARTITIONS={}: {}; nothing was written".format(partitions, e))
    todo = plan(image, firmware, csv_parts, csv_name)
    check_version()
    size = probe("flash", port, "nothing was written")
    if size is not None and table_end(csv_parts) > size:
        sys.exit("flash: the board on {} has {} of flash; {} needs {}: on an 8 MB board use "
                 "PARTITIONS=partitions-8MiB.csv; nothing was written"
                 .format(port, _megabytes(size), csv_name, _megabytes(table_end(csv_parts))))
    args = ["write-flash"]
    if todo.full:
        board = board_table(port)
        refusal = board and moved_files(board, csv_parts, csv_name, port)
        if refusal:
            sys.exit(refusal)
        differences = table_differences(board, csv_parts, "board", csv_name) if board else []
        if differences:
            print("flash: the board's partition table is not {}'s; where they differ, what the "
                  "board held is no longer found (a ROMFS image: `make deploy-romfs` again):"
                  .format(csv_name))
            print("\n".join(differences))
        if _megabytes(size or 0) in FLASH_SIZES:  # into the bootloader's header: the whole flash
            args += ["--flash-size", _megabytes(size)]
            if header_flash_size(image) != _megabytes(size):
                print("flash: the image's bootloader says {} of flash; written as the board's {}"
                      .format(header_flash_size(image), _megabytes(size)))
    for note in todo.notes:
        print("flash: " + note)
    for piece in todo.pieces:
        if piece.data is not None:
            os.makedirs(WORK_DIR, exist_ok=True)
            with open(piece.path, "wb") as f:
                f.write(piece.data)
        print("flash: {:#x} {} ({})".format(piece.offset, serial_board.shown(piece.path),
                                           piece.what))
    print("flash: nvs (settings), phy_init, romfs and vfs (files, /data included) are not written")
    if todo.otadata:
        print("flash: erasing otadata so the board boots the app just written")
        _esptool("flash", port, ["erase-region", hex(todo.otadata.offset),
                                 hex(todo.otadata.size)])
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


def _esptool(who, port, args, failed=None):
    result = serial_board.run(on_board(port) + args)
    if result.returncode != 0:
        failed = failed or "run `make {}` again, it does every step again".format(who)
        sys.exit("{}: esptool stopped part-way on {} (exit status {}; its message is above): {}"
                 .format(who, port, result.returncode, failed))


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
