# Throughput of the SSE parser plus the Claude stream assembler over a recorded stream.
#   <python> bench/drivers/sse_parse.py LIB STREAM_FILE REPEATS
import sys

sys.path.insert(0, "bench/drivers")
import common  # noqa: E402

LIB, STREAM, REPEATS = sys.argv[1], sys.argv[2], int(sys.argv[3])
common.use_firmware(LIB)

from mimi.llm.sse import SSEParser  # noqa: E402
from mimi.llm.stream import MessageAssembler  # noqa: E402

with open(STREAM, "rb") as f:
    raw = f.read()
lines = raw.decode().split("\n")  # the HTTP client hands lines over as str, without "\n"
size = len(raw)
del raw
runs = []
chars = 0
for _ in range(REPEATS):
    start = common.now_us()
    parser = SSEParser()
    assembler = MessageAssembler()
    chars = 0
    for line in lines:
        event = parser.feed(line)
        if event is not None:
            delta = assembler.handle(event[0], event[1])
            if delta:
                chars += len(delta)
    runs.append(common.elapsed_us(start) / 1e6)
    if not assembler.done:
        raise SystemExit("the stream did not finish")
common.report({"seconds": runs, "bytes": size, "text_chars": chars, "lines": len(lines),
               "tools": len(assembler.tool_calls)})
