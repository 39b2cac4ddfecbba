# Property test: any text, sent escaped (surrogate pairs, lone halves) or as raw UTF-8, comes out of
# the JSON decoding seam and the session store the same on MicroPython and CPython: valid text, pairs
# joined, each lone surrogate one U+FFFD.
import json
import os
import shutil
import subprocess
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.runtimes import CPYTHON, MICROPYTHON, ROOT

_SETTINGS = settings(max_examples=int(os.environ.get("MIMI_PROP_EXAMPLES", "60")), deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])
_SAMPLES = ["\U0001f355", "\U0001f1f5\U0001f1f9", "\U0001f44d\U0001f3fd", "\u200d", "\u0301", "\u4f60",
            "\u05e9", "\u0645", "\U0001d400", "\U00020000", "\\", '"', "\n", "\x00", "\u2028", "\ufeff"]
pieces = st.one_of(
    st.characters(codec="utf-8"),
    st.integers(min_value=0xD800, max_value=0xDFFF).map(chr),  # lone halves, or pairs by chance
    st.sampled_from(_SAMPLES),
)
texts = st.lists(st.lists(pieces, max_size=24).map("".join), min_size=1, max_size=6)


def _expected(text):
    """Adjacent high+low halves joined, every other half U+FFFD: UTF-16 decoding with 'replace'."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _run(runtime, lines):
    folder = tempfile.mkdtemp(prefix="mimi-unicode-")
    try:
        source = os.path.join(folder, "in.jsonl")
        with open(source, "wb") as f:
            f.write(b"\n".join(lines) + b"\n")
        done = subprocess.run(runtime + ["tests/host/unicode_roundtrip.py", os.path.join(folder, "s"), source],
                              cwd=ROOT, capture_output=True, timeout=60)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return json.loads(done.stdout.decode("utf-8"))  # strict: output that is not UTF-8 fails here
    finally:
        shutil.rmtree(folder, True)


@given(texts)
@_SETTINGS
def test_any_text_round_trips_the_same_on_both_runtimes(items):
    expected = [_expected(t) for t in items]
    escaped = [json.dumps(t).encode() for t in items]  # ensure_ascii: \ud83c\udf55, lone \udc00
    raw = [json.dumps(e, ensure_ascii=False).encode("utf-8") for e in expected]
    for lines in (escaped, raw):
        for runtime in (MICROPYTHON, CPYTHON):
            out = _run(runtime, lines)
            assert out["decoded"] == expected, (runtime[0], lines)
            assert out["stored"] == expected, (runtime[0], lines)
