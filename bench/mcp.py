# The board's MCP server: a tools/call round trip (p50/p99, an MCP client on the laptop, a new connection per
# request as the gateway answers each one and closes), and the heap one MCP session costs (ROMFS form): the
# server's code, the session and the called tool's module, above the board with its gateway's web server loaded.
import http.client
import json
import time

from bench.drivers_run import run_driver
from bench.setup import API_KEY, BENCH_WS_TOKEN, Firmware, free_port, micropython, reps, runtime_command, \
    standard_flash
from bench.stats import summary, tail

HEAP = "1024K"  # the session's heap: roomy, so the figure is what it holds, not what a tight heap forces
CALLS = 300  # tools/call round trips per runtime; BENCH_QUICK: 30
WARMUP = 5  # the first calls load the tool's module and the server's code
VERSION = "2025-11-25"


def _post(port, body, session=None):
    """(status, headers, the parsed JSON body or None) of one POST /mcp."""
    headers = {"Authorization": "Bearer " + BENCH_WS_TOKEN, "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    if session:
        headers.update({"Mcp-Session-Id": session, "MCP-Protocol-Version": VERSION})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/mcp", json.dumps(body), headers)
        answer = conn.getresponse()
        data = answer.read()
        return answer.status, answer.headers, json.loads(data) if data else None
    finally:
        conn.close()


def round_trips(fake, runtime):
    flash = standard_flash("mcp-" + runtime)
    port = free_port()
    times = []
    with Firmware(runtime, flash, "--anthropic-api", fake.url, "--ws-port", port) as firmware:
        firmware.expect(r"gateway: web chat on")
        firmware.ready()
        status, headers, _ = _post(port, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
        session = headers["Mcp-Session-Id"]
        call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "get_current_time", "arguments": {}}}
        for n in range(reps(CALLS, 30) + WARMUP):
            call["id"] = n + 1
            started = time.perf_counter()
            status, _, answer = _post(port, call, session)
            took = (time.perf_counter() - started) * 1000
            if status != 200 or answer["result"]["isError"]:
                raise SystemExit("bench: tools/call failed: {} {}".format(status, answer))
            if n >= WARMUP:
                times.append(took)
    return tail(times, 2)


def session_heap(fake, n):
    flash = standard_flash("mcp-heap-{}".format(n))
    lib = runtime_command("romfs")[1]
    return run_driver(micropython(HEAP), "mcp_session.py", lib, flash, fake.url, API_KEY, free_port(),
                      BENCH_WS_TOKEN)


def measure(fake, log):
    trips = {}
    for runtime in ("mpy", "cpython"):
        trips[runtime] = round_trips(fake, runtime)
        log("  {}: MCP tools/call round trip p50 {} ms, p99 {} ms".format(
            runtime, trips[runtime]["median"], trips[runtime]["p99"]))
    runs = [session_heap(fake, n) for n in range(reps(3))]
    bad = [run for run in runs if not run["ok"]]
    if bad:
        raise SystemExit("bench: an MCP session failed: {}".format(bad[0]))
    heap = {"romfs": {
        "session_kb": summary([run["session"] / 1024 for run in runs], 1),
        "second_session_kb": summary([run["second_session"] / 1024 for run in runs], 1),
        "peak_above_kb": summary([run["above_warm"] / 1024 for run in runs], 1),
        "gateway_kb": summary([run["gateway"] / 1024 for run in runs], 1),
        "idle_kb": summary([run["idle"] / 1024 for run in runs], 1),
        "tool_list_bytes": runs[-1]["list_bytes"], "heap": HEAP}}
    log("  MCP session on ROMFS: holds {} KB (one more: {} KB), peak +{} KB, above the gateway in use (its web "
        "server: {} KB)".format(heap["romfs"]["session_kb"]["median"], heap["romfs"]["second_session_kb"]["median"],
                                heap["romfs"]["peak_above_kb"]["median"], heap["romfs"]["gateway_kb"]["median"]))
    return trips, heap
