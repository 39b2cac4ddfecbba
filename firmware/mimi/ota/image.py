# A firmware image streamed over HTTPS into the next OTA slot, 4 KB at a time, hashed, then made the boot slot.
import binascii
import hashlib

import esp32

from mimi import utf8
from mimi.net import http
from mimi.ota import mark_valid  # noqa: F401  (re-exported; it lives in mimi.ota so the boot verdict needs no image)
from mimi.platform import const

BLOCK_SIZE = const(4096)  # what writeblocks() erases and writes at once
_HASH_HEX_LEN = const(64)  # a SHA-256 in hex
_HASH_FILE_MAX = const(256)  # a <image>.sha256 file: the hash, maybe a file name after it
READ_TIMEOUT_S = const(30)  # longest silence while downloading
DOWNLOAD_DEADLINE_S = const(900)  # a whole image, however slow the link; longer is reported and retried later
_PROGRESS_STEP = const(262144)  # a progress line every 256 KB
_IMAGE_MAGIC = const(0xE9)  # the first byte of every ESP32 app image


class UpdateError(Exception):
    """The update was refused or failed; the running firmware is untouched."""


def check_hash(text):
    """A SHA-256 given as 64 hex digits, lower-cased; UpdateError otherwise."""
    value = text.strip().lower()
    if len(value) != _HASH_HEX_LEN or any(c not in "0123456789abcdef" for c in value):
        raise UpdateError("'{}' is not a SHA-256 (64 hex digits)".format(text[:80]))
    return value


def check_https(url):
    if not url.startswith("https://"):
        raise UpdateError("updates are only fetched over https:// (TLS verified), not {}".format(url[:80]))


def hex_digest(digest):
    return binascii.hexlify(digest.digest()).decode()


def next_slot():
    """The OTA slot after the running one; UpdateError on firmware without OTA slots."""
    try:
        return esp32.Partition(esp32.Partition.RUNNING).get_next_update()
    except (OSError, AttributeError):
        raise UpdateError("this firmware has no second app slot (stock MicroPython?): use ota_bundle <url>")


def slot_name(partition):
    return partition.info()[4]


def describe():
    """'running ota_0, next boot ota_1' (or why it cannot tell)."""
    try:
        running = esp32.Partition(esp32.Partition.RUNNING)
        boot = esp32.Partition(esp32.Partition.BOOT)
        return "running {}, next boot {}".format(slot_name(running), slot_name(boot))
    except (OSError, AttributeError, ValueError) as exc:
        return "slots unknown ({})".format(exc)


async def published_hash(url):
    """The SHA-256 published beside an image, in <url>.sha256 (its first word)."""
    check_https(url)
    resp = await http.request("GET", url + ".sha256", None, None, READ_TIMEOUT_S)
    try:
        if resp.status != 200:
            raise UpdateError("no published hash at {}.sha256 (HTTP {})".format(url, resp.status))
        text = utf8.valid_text(await resp.read(_HASH_FILE_MAX))
    finally:
        await resp.aclose()
    words = text.split()
    return check_hash(words[0] if words else "")


async def install(url, expected, target=None, progress=None):
    """Download url into the next slot, verify its SHA-256, make it the boot slot. Returns its size."""
    check_https(url)
    expected = check_hash(expected)
    target = target or next_slot()
    resp = await http.request("GET", url, None, None, READ_TIMEOUT_S, None, DOWNLOAD_DEADLINE_S)
    try:
        if resp.status != 200:
            raise UpdateError("the server answered HTTP {} for {}".format(resp.status, url))
        return await write_image(resp, expected, target, progress)
    finally:
        await resp.aclose()


async def write_image(source, expected, target, progress=None):
    """Stream source (read_some(n), headers) into target block by block; set_boot() if the hash matches."""
    if target.ioctl(5, 0) != BLOCK_SIZE:
        raise UpdateError("the slot's block size is not {}".format(BLOCK_SIZE))
    capacity = target.ioctl(4, 0) * BLOCK_SIZE
    announced = source.headers.get("content-length")
    announced = int(announced) if announced else None
    if announced is not None and announced > capacity:
        raise UpdateError("the image ({} bytes) is larger than the {} slot ({} bytes)".format(
            announced, slot_name(target), capacity))
    buf = bytearray(BLOCK_SIZE)
    view = memoryview(buf)
    digest = hashlib.sha256()
    fill = block = total = 0
    next_report = _PROGRESS_STEP
    while True:
        data = await source.read_some(BLOCK_SIZE - fill)
        if not data:
            break
        n = len(data)
        total += n
        if total > capacity:
            raise UpdateError("the image is larger than the {} slot ({} bytes)".format(slot_name(target), capacity))
        view[fill : fill + n] = data
        fill += n
        if fill == BLOCK_SIZE:
            _write_block(target, block, buf, digest)
            block += 1
            fill = 0
        if progress and total >= next_report:
            progress(_progress_line(total, announced))
            next_report += _PROGRESS_STEP
    if total == 0:
        raise UpdateError("the image is empty")
    if announced is not None and total != announced:
        raise UpdateError("the download ended after {} of {} bytes".format(total, announced))
    if fill:
        digest.update(view[:fill])
        view[fill:] = b"\xff" * (BLOCK_SIZE - fill)  # the rest of the last block stays erased flash
        _write_block(target, block, buf, None)
    got = hex_digest(digest)
    if got != expected:
        raise UpdateError("SHA-256 mismatch: the published value is {}, the download's is {}".format(expected, got))
    try:
        target.set_boot()
    except OSError as exc:
        raise UpdateError("the bootloader refused the image in {} ({})".format(slot_name(target), exc))
    return total


def _write_block(target, number, buf, digest):
    if number == 0 and buf[0] != _IMAGE_MAGIC:
        raise UpdateError("not an ESP32 app image (first byte 0x{:02x}, expected 0xe9)".format(buf[0]))
    if digest is not None:
        digest.update(buf)
    target.writeblocks(number, buf)


def _progress_line(total, announced):
    if announced:
        return "ota: {} KB of {} KB ({}%)".format(total // 1024, announced // 1024, total * 100 // announced)
    return "ota: {} KB".format(total // 1024)
