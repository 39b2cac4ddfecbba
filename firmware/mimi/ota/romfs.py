# `ota_bundle <url>.img`: a new ROMFS image downloaded beside the running one, verified, written at the next boot.
# The partition is rewritten by romfs_boot.py from RAM before anything runs from it (the running code
# executes in place from that flash); until then, and on any failure, the running image stays as it is.
import hashlib

from mimi.net import http
from mimi.ota.image import DOWNLOAD_DEADLINE_S, READ_TIMEOUT_S, UpdateError, check_hash, check_https, hex_digest
from mimi.platform import const
from mimi.storage import files

ROMFS_HEADER = b"\xd2\xcd\x31"
_CHUNK = const(1024)


def _boot():
    import romfs_boot  # the root file boot.py runs (a source file: it also holds the names below)

    return romfs_boot


def capacity():
    """Bytes of the board's romfs partition; UpdateError where there is none."""
    seg = _boot().segment()
    if seg is None:
        raise UpdateError("this board has no romfs partition (or its MicroPython no ROMFS): use a bundle")
    return seg.ioctl(4, 0) * seg.ioctl(5, 0)


async def stage(root, url, expected, progress=None, get=None):
    """Download url next to the running image, check size, header and SHA-256; returns its size.

    Only a whole, verified image is left as romfs_new.img (+ .sha256) for the next boot to write."""
    check_https(url)
    expected = check_hash(expected)
    boot = _boot()
    limit = capacity()
    new = files.join(root, boot.NEW)
    part = new + ".part"
    resp = await (get or _get)(url)
    total = 0
    try:
        if resp.status != 200:
            raise UpdateError("the server answered HTTP {} for {}".format(resp.status, url))
        digest = hashlib.sha256()
        with open(part, "wb") as f:
            while True:
                data = await resp.read_some(_CHUNK)
                if not data:
                    break
                if total == 0 and not bytes(data[:3]) == ROMFS_HEADER[: len(data[:3])]:
                    raise UpdateError("not a ROMFS image (it must start with d2 cd 31: `make romfs`)")
                total += len(data)
                if total > limit:
                    raise UpdateError("the image is larger than the romfs partition ({} bytes)".format(limit))
                digest.update(data)
                f.write(data)
        got = hex_digest(digest)
        announced = resp.headers.get("content-length")
        if total < len(ROMFS_HEADER) or (announced and int(announced) != total):
            raise UpdateError("the download ended after {} of {} bytes".format(total, announced or "?"))
        if got != expected:
            raise UpdateError("SHA-256 mismatch: expected {}, the download's is {}".format(expected, got))
    except BaseException:
        files.remove(part)
        raise
    finally:
        await resp.aclose()
    files.write_atomic(new + ".sha256", expected + "\n")
    _rename(part, new)  # the image appears whole, after its hash: romfs_boot needs both
    if progress:
        progress("ota_bundle: ROMFS image of {} bytes verified (SHA-256 {}); it is written at the restart".format(
            total, expected))
    return total


def _rename(src, dest):
    import os

    try:
        os.remove(dest)
    except OSError:
        pass
    os.rename(src, dest)


async def _get(url):
    return await http.request("GET", url, None, None, READ_TIMEOUT_S, None, DOWNLOAD_DEADLINE_S)
