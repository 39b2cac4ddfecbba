# What TLS costs the GC heap: the parsed CA certificates, one session after its handshake and while it reads.
#   micropython -X heapsize=N bench/drivers/tls_cost.py LIB SHIPPED_CERTS OWNER_CERTS PORT
# Only a MicroPython whose mbedTLS allocates from the GC heap shows it (../shared/tools/micropython32); the
# PyPI unix port gives mbedTLS the C library's malloc, and the figures come out near 0.
import sys

sys.path.insert(0, "bench/drivers")
import common  # noqa: E402

LIB, SHIPPED, OWNER, PORT = sys.argv[1:5]
common.use_firmware(LIB)
common.mark_host()

import asyncio  # noqa: E402
import gc  # noqa: E402

import esp32  # noqa: E402

esp32.set_flash_dir(None)
from mimi import board  # noqa: E402
from mimi.settings import Config  # noqa: E402
from mimi.net import tls  # noqa: E402

READ_CHUNK = 512


def used():
    gc.collect()
    return gc.mem_alloc()


def cost_of(make):
    """Heap held by what make() returns, while it is held."""
    before = used()
    held = make()
    after = used()
    del held
    return after - before


async def session(ctx, out):
    """One https GET to the local server: heap after the handshake and at the peak while the body is read."""
    before = used()
    reader, writer = await asyncio.open_connection("localhost", int(PORT), ssl=ctx, server_hostname="localhost")
    writer.write(b"GET /big HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    await writer.drain()
    first = await reader.read(1)  # MicroPython shakes hands with the first bytes sent: done once one comes back
    out["after_handshake"] = used() - before
    peak, total = 0, len(first)
    while True:
        data = await reader.read(READ_CHUNK)
        if not data:
            break
        total += len(data)
        gc.collect()
        peak = max(peak, gc.mem_alloc() - before)
    out["while_reading"] = peak
    out["body_bytes"] = total
    writer.close()
    await writer.wait_closed()
    del reader, writer
    out["after_close"] = used() - before


def main():
    out = {}
    tls.configure([SHIPPED, OWNER])
    shipped = len([name for name in __import__("os").listdir(SHIPPED) if name.endswith(".der")])
    out["shipped_certificates"] = shipped
    out["all_certificates"] = cost_of(tls.context)  # what a roomy board keeps for as long as it runs
    tls.configure([SHIPPED, OWNER])
    board.choose(Config(), heap=256 * 1024)  # small-board mode: one context per connection, its host's roots
    out["small_board_telegram"] = cost_of(lambda: tls.context("api.telegram.org"))
    out["small_board_anthropic"] = cost_of(lambda: tls.context("api.anthropic.com"))
    tls.configure([OWNER])  # the test CA alone signs the local server
    ctx = tls.context("localhost")
    out["test_ca_only"] = cost_of(lambda: tls.context("localhost"))
    asyncio.run(session(ctx, out))
    common.report(out)


main()
