# Ogg/Opus files for the fakes: pages with real headers (OpusHead, OpusTags, CRC, granule positions), the
# audio packets filler bytes: enough for a client that checks the magic, reads the length or streams it.
import struct

_OPUS_RATE = 48000
_PACKET_BYTES = 160  # one 20 ms packet at 64 kbit/s
_PACKETS_PER_PAGE = 50  # a second of audio a page


def _crc_table():
    table = []
    for i in range(256):
        r = i << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) if r & 0x80000000 else r << 1
        table.append(r & 0xFFFFFFFF)
    return table


_TABLE = _crc_table()


def _crc(data):
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _TABLE[((crc >> 24) & 0xFF) ^ byte]
    return crc


def _page(packets, granule, sequence, kind):
    lacing = b""
    for packet in packets:
        lacing += b"\xff" * (len(packet) // 255) + bytes([len(packet) % 255])
    head = struct.pack("<4sBBqIIIB", b"OggS", 0, kind, granule, 0x4D494D49, sequence, 0, len(lacing)) + lacing
    page = head + b"".join(packets)
    return page[:22] + struct.pack("<I", _crc(page)) + page[26:]


def ogg_opus(seconds, seed=0):
    """An Ogg/Opus file of `seconds` seconds (about 8 KB a second)."""
    head = b"OpusHead" + struct.pack("<BBHIhB", 1, 1, 312, 16000, 0, 0)
    tags = b"OpusTags" + struct.pack("<I", 4) + b"mimi" + struct.pack("<I", 0)
    pages = [_page([head], 0, 0, 2), _page([tags], 0, 1, 0)]
    packet = bytes((seed + i) % 256 for i in range(_PACKET_BYTES))
    total = max(1, int(seconds * 50))
    done = 0
    while done < total:
        n = min(_PACKETS_PER_PAGE, total - done)
        done += n
        granule = 312 + done * _OPUS_RATE // 50
        pages.append(_page([packet] * n, granule, len(pages), 4 if done == total else 0))
    return b"".join(pages)


def duration(data):
    """Seconds of an Ogg/Opus file from its last page's granule position (less the pre-skip)."""
    at = data.rfind(b"OggS")
    granule = struct.unpack("<q", data[at + 6:at + 14])[0]
    return (granule - 312) / _OPUS_RATE
