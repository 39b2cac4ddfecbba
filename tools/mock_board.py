#!/usr/bin/env python3
"""`make mock-board`: an ESP32-S3 in its ROM bootloader, to try the flashing commands without one.

esp32-mock-bootloader (PyPI) answers esptool's real ROM bootloader protocol (SLIP: sync, chip
detection, the flasher stub, flash begin/data/end, erase, MD5 verify, read-flash) on a loopback
port, with an in-memory flash that lives as long as the process. Its flash is 4 MB; this gives it
the board's (16 MB as on an N16R8, --flash-size 8MB for the 8 MB table) and reports that size in
the flash chip's ID, as a real chip does, so esptool and `make flash` see it. Every flashing
command takes the printed socket:// URL as PORT, as it takes /dev/ttyACM0:

    make flash PORT=socket://127.0.0.1:9876 FIRMWARE=firmware.bin
    .venv/bin/esptool --chip esp32s3 --port socket://127.0.0.1:9876 read-flash 0x8000 0xc00 t.bin

(pyserial reads a socket:// port a byte at a time: a read-flash of megabytes takes minutes.)
It stops with Ctrl-C; its flash is gone then. --port 0 takes a free port (--port-file says which).
"""
import argparse
import socket
import sys

CHIP = "esp32s3"
DEFAULT_PORT = 9876
BIND = "127.0.0.1"
# The JEDEC ID's capacity byte (its third) esptool reads the flash size from: 2**code bytes.
SIZE_CODES = {"4MB": 0x16, "8MB": 0x17, "16MB": 0x18, "32MB": 0x19}
MOCK_VERSION = "0.3"  # the esp32-mock-bootloader whose settings this sets (requirements-dev.txt)
# How long the mock waits for esptool's next bytes. Its 50 ms gives up on a read-flash whose first
# acknowledgement comes later (esptool then fails: "Serial data stream stopped"); esptool itself
# waits 3 s for the board.
RECV_TIMEOUT_S = 3.0


def url(port):
    return "socket://{}:{}".format(BIND, port)


def configure(protocol, server, name):
    """The mock's flash size, the ID its flash chip answers with, and its patience (all read when
    a client connects)."""
    for module, attr in ((protocol, "FLASH_MOCK_SIZE"), (protocol, "MOCK_FLASH_ID"),
                         (server, "_CLIENT_RECV_TIMEOUT")):
        if not isinstance(getattr(module, attr, None), (int, float)):
            sys.exit("mock-board: esp32-mock-bootloader has no {}: this tool knows version {}; "
                     "`make venv` installs it".format(attr, MOCK_VERSION))
    server._CLIENT_RECV_TIMEOUT = RECV_TIMEOUT_S
    code = SIZE_CODES[name]
    protocol.FLASH_MOCK_SIZE = 1 << code
    protocol.MOCK_FLASH_ID = (code << 16) | (protocol.MOCK_FLASH_ID & 0xFFFF)


def port_is_free(port):
    probe = socket.socket()
    try:
        probe.bind((BIND, port))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chip", default=CHIP, help="the chip it says it is (default esp32s3)")
    parser.add_argument("--flash-size", default="16MB", choices=sorted(SIZE_CODES))
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="TCP port (0: a free one)")
    parser.add_argument("--port-file", help="write the port it listens on into this file")
    args = parser.parse_args(argv)
    try:
        from esp32_mock_bootloader import protocol, server
    except ImportError:
        sys.exit("mock-board: esp32-mock-bootloader is not installed: run `make venv`")
    configure(protocol, server, args.flash_size)
    if args.port:
        if not port_is_free(args.port):
            sys.exit("mock-board: port {} is in use (another mock board?): choose another with "
                     "MOCK_PORT=...".format(args.port))
        print("mock-board: an {} with {} of flash, erased; flash it with PORT={}".format(
            args.chip, args.flash_size, url(args.port)), flush=True)
    server.run_server(args.port, chip_mode=args.chip, bind=BIND, port_file=args.port_file)


if __name__ == "__main__":
    main()
