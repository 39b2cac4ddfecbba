# Ogg/Opus files: the magic that says one is, and its length in seconds from the last page's granule position.
from mimi.platform import const

MAGIC = b"OggS"
_TAIL = const(8192)  # bytes read from the end to find the last page (pages are at most about 64 KB, mostly 4 KB)
_OPUS_RATE = const(48000)  # Opus granule positions count 48 kHz samples whatever the input rate


def is_ogg(path):
    with open(path, "rb") as f:
        return f.read(4) == MAGIC


def duration_s(path, size):
    """Seconds of an Ogg/Opus file (rounded up), or None when it is not one or no page is found."""
    if size < 32:
        return None
    with open(path, "rb") as f:
        if f.read(4) != MAGIC:
            return None
        f.seek(max(0, size - _TAIL))
        tail = f.read(_TAIL)
    at = tail.rfind(MAGIC)
    while at >= 0:
        if at + 14 <= len(tail) and tail[at + 4] == 0:  # version 0: a real page header, not audio bytes
            granule = int.from_bytes(tail[at + 6:at + 14], "little")
            if 0 < granule < 1 << 48:
                return (granule + _OPUS_RATE - 1) // _OPUS_RATE
        at = tail.rfind(MAGIC, 0, at)
    return None
