# Autobahn conformance (kosoku) of the gateway's WebSocket layer, served by tests/gateway_echo.py.
import asyncio
import socket
import subprocess
import time

import pytest

from tests.runtimes import RUNTIMES, ROOT

kosoku = pytest.importorskip("kosoku")

# Framing, pings, reserved bits, opcodes, fragmentation, UTF-8, close handling. Left out:
# 9.* (performance), 10.* (auto-fragmentation), 12.*/13.* (compression: the gateway offers none).
GROUPS = ("1", "2", "3", "4", "5", "6", "7")
ACCEPTED = ("OK", "NON-STRICT", "INFORMATIONAL")
# Messages of 64 KB and more go one at a time: a 512 KB MicroPython heap holds one such echo.
LARGE_CASES = ("1.1.6", "1.1.7", "1.1.8", "1.2.6", "1.2.7", "1.2.8", "7.1.6")
_START_TIMEOUT_S = 15


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_listening(port, proc):
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError("echo server exited: " + proc.stdout.read())
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("echo server did not listen on port {}".format(port))


def _selected_case_ids():
    from kosoku.cases import CASES

    return sorted(case_id for case_id in CASES if case_id.split(".")[0] in GROUPS)


def _run_cases(url, cases, exclude, concurrency):
    try:
        return asyncio.run(kosoku.run_fuzzingclient(url, cases, exclude, concurrency=concurrency))
    except kosoku.FailureError as failure:
        return failure.results


@pytest.mark.parametrize("runtime", ["micropython", "cpython"])
def test_autobahn_cases_pass(runtime):
    port = _free_port()
    proc = subprocess.Popen(
        RUNTIMES[runtime] + ["tests/gateway_echo.py", str(port)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        _wait_listening(port, proc)
        url = "ws://127.0.0.1:{}/".format(port)
        groups = [group + ".*" for group in GROUPS]
        results = _run_cases(url, groups, LARGE_CASES, 4) + _run_cases(url, LARGE_CASES, None, 1)
    finally:
        proc.terminate()
        server_output = proc.communicate(timeout=10)[0]

    failed = [
        "{} {} / {}: {} {} (close code {})".format(
            r.case_id, r.behavior.value, r.behavior_close.value, r.result, r.result_close,
            r.remote_close_code)
        for r in results
        if not (r.passed and r.behavior.value in ACCEPTED and r.behavior_close.value in ACCEPTED)
    ]
    assert not failed, "\n".join(failed)
    assert sorted(r.case_id for r in results) == _selected_case_ids()
    assert "Traceback" not in server_output, server_output
