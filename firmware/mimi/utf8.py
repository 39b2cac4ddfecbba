# Text from bytes that may not be UTF-8: strict checks, and each broken byte shown as U+FFFD.
# MicroPython's decode has no errors= and accepts surrogate halves and some overlongs; this does not.
REPLACEMENT = "\ufffd"
# Lead bytes whose second byte has a narrower range than 80..BF (no overlongs, surrogates, > U+10FFFF).
SECOND_BYTE_RANGE = {
    0xE0: (0xA0, 0xBF), 0xED: (0x80, 0x9F), 0xF0: (0x90, 0xBF), 0xF4: (0x80, 0x8F),
}
_NEVER_IN_UTF8 = b"\xc0\xc1\xf5\xf6\xf7\xf8\xf9\xfa\xfb\xfc\xfd\xfe\xff"


def strict(data):
    """Complete UTF-8 bytes -> str; ValueError unless strictly valid (no overlongs, surrogates)."""
    try:
        text = str(data, "utf-8")
    except UnicodeError:
        raise ValueError("invalid UTF-8")
    if len(text) != len(data):  # not pure ASCII: add the checks MicroPython's decoder skips
        for byte in _NEVER_IN_UTF8:
            if data.find(bytes((byte,))) >= 0:
                raise ValueError("invalid UTF-8")
        for lead, (low, high) in SECOND_BYTE_RANGE.items():
            lead_byte = bytes((lead,))
            at = data.find(lead_byte)
            while at >= 0:
                if at + 1 >= len(data) or not low <= data[at + 1] <= high:
                    raise ValueError("invalid UTF-8")
                at = data.find(lead_byte, at + 1)
    return text


def boundary(data):
    """Length of the longest prefix of data that does not end inside a UTF-8 character."""
    end = len(data)
    for back in range(1, min(4, end) + 1):
        byte = data[end - back]
        if byte < 0x80:  # ASCII: the end is a boundary
            return end
        if byte >= 0xC0:  # a lead byte: is its character complete?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return end if back >= need else end - back
    return end


def has_raw_surrogate(data):
    """True when UTF-8 bytes hold a surrogate half (ED A0..BF), which neither runtime's json refuses."""
    at = data.find(b"\xed")
    while at >= 0:
        if data[at + 1 : at + 2] >= b"\xa0":
            return True
        at = data.find(b"\xed", at + 1)
    return False


def sequence_length(lead):
    """Length of the UTF-8 sequence a lead byte starts, 0 for a byte that cannot start one."""
    if lead < 0x80:
        return 1
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0


def _well_formed(data, at, step):
    """True when data[at:at+step] (inside data) is one well-formed UTF-8 character."""
    low, high = SECOND_BYTE_RANGE.get(data[at], (0x80, 0xBF))
    if step > 1 and not low <= data[at + 1] <= high:
        return False
    for i in range(2, step):
        if not 0x80 <= data[at + i] <= 0xBF:
            return False
    return True


def valid_text(data):
    """bytes as str, each byte that is not part of a well-formed UTF-8 character replaced by U+FFFD.

    Valid input (the common case) is decoded once at C speed, with no other copy."""
    try:
        return strict(data)
    except ValueError:
        pass
    out = bytearray()
    replacement = REPLACEMENT.encode()
    at, start, size = 0, 0, len(data)
    while at < size:
        step = sequence_length(data[at])
        if step and at + step <= size and _well_formed(data, at, step):
            at += step
            continue
        out += data[start:at]
        out += replacement
        at += 1
        start = at
    out += data[start:]
    return str(out, "utf-8")
