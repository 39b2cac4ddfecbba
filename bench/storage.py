# Direct module figures: history load vs session length, SSE parsing throughput (both runtimes).
import os

from bench.drivers_run import run_driver
from bench.setup import QUICK, fresh_dir, micropython, reps, runtime_command, session_line
from bench.stats import summary
from host_sim.sse_replies import Reply

LENGTHS = (100, 10000) if QUICK else (100, 10000, 100000)
SSE_TEXT_CHARS = 48 * 1024  # under the assembler's 64 KB reply limit
SSE_CHUNK = 16  # characters per text_delta, about what Claude sends
SSE_DRIVER_HEAP = "8M"  # the recorded stream is held in RAM as lines, outside the timing


def _write_session(folder, lines):
    stem = "bench_s{}".format(lines)
    with open(os.path.join(folder, stem + ".jsonl"), "w") as f:
        for i in range(lines):
            role = "user" if i % 2 == 0 else "assistant"
            f.write(session_line(role, "Message {} about the garden and the weather.".format(i)))
            f.write("\n")
    return stem


def history_load(log):
    folder = fresh_dir("sessions")
    stems = [_write_session(folder, n) for n in LENGTHS]
    out = {}
    for runtime in ("mpy", "cpython"):
        cmd, lib = runtime_command(runtime)
        result = run_driver(cmd, "history_load.py", lib, folder, reps(30, 3), *stems)
        figures = {}
        for n, stem in zip(LENGTHS, stems):
            figures[str(n)] = dict(summary(result[stem]["ms"]), messages=result[stem]["messages"])
        longest = figures[str(LENGTHS[-1])]["median"]
        figures["ratio_longest_to_100"] = round(longest / figures["100"]["median"], 2)
        out[runtime] = figures
        log("  history load, {}: {}".format(runtime, ", ".join(
            "{} lines {} ms".format(n, figures[str(n)]["median"]) for n in LENGTHS)))
    return out


def _stream_file():
    """A recorded reply: 48 KB of text in 16-character deltas, then one tool call."""
    text = ("The garden needs water on Tuesdays; tomatoes like sun. " * 1000)[:SSE_TEXT_CHARS]
    reply = Reply([{"type": "text", "text": text},
                   {"type": "tool_use", "id": "toolu_01bench", "name": "get_current_time",
                    "input": {"zone": "Europe/Berlin", "note": "x" * 200}}],
                  "tool_use", chunk=SSE_CHUNK)
    usage = {"input_tokens": 2000, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 5000}
    path = os.path.join(fresh_dir("sse"), "stream.txt")
    with open(path, "wb") as f:
        for step, value in reply.steps("claude-sonnet-4-5", usage, "msg_01bench"):
            f.write(value)
    return path


def sse_parsing(log):
    path = _stream_file()
    out = {}
    for runtime in ("mpy", "cpython"):
        cmd, lib = runtime_command(runtime)
        if runtime == "mpy":
            cmd = micropython(SSE_DRIVER_HEAP)
        result = run_driver(cmd, "sse_parse.py", lib, path, reps(10, 2))
        rates = [result["bytes"] / s / 1e6 for s in result["seconds"]]
        out[runtime] = dict(summary(rates), unit="MB/s", stream_bytes=result["bytes"],
                            text_chars=result["text_chars"], events_lines=result["lines"])
        log("  SSE parsing, {}: {} MB/s".format(runtime, out[runtime]["median"]))
    return out


