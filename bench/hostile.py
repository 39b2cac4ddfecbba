# The heap one unauthenticated connection can hold on the gateway (issue 32), ROMFS form: a request head held just
# short of the caps, 1,500 headers sent at once, POSTs without a token that announce a 16 KB body (issue 41), and
# (token off) a WebSocket message of 63 empty fragments that never ends; bench/drivers/gateway_attack.py takes them.
from bench.drivers_run import run_driver
from bench.setup import API_KEY, BENCH_WS_TOKEN, free_port, micropython, reps, runtime_command, standard_flash
from bench.stats import summary

HEAP = "1024K"  # roomy: the figure is what a connection holds, not what a tight heap forces
GOAL_KB = 8


def _run(fake, n):
    flash = standard_flash("attack-{}".format(n))
    lib = runtime_command("romfs")[1]
    return run_driver(micropython(HEAP), "gateway_attack.py", lib, flash, fake.url, API_KEY, free_port(),
                      BENCH_WS_TOKEN)


def measure(fake, log):
    runs = [_run(fake, n) for n in range(reps(3))]
    bad = [run for run in runs if not run["ok"]]
    if bad:
        raise SystemExit("bench: an attack was not refused as it should be: {}".format(bad[0]))
    kb = {key: summary([run[key] / 1024 for run in runs], 1)
          for key in ("head_held", "many_headers_peak", "bodies_held", "client_held", "fragments_held")}
    largest = max(kb[key]["median"] for key in ("head_held", "many_headers_peak", "bodies_held", "fragments_held"))
    figure = {"romfs": dict(kb, largest_kb=largest, heap=HEAP)}
    log("  one unauthenticated connection holds at most {} KB: a head at the caps {} KB, 1,500 headers (431) peak "
        "+{} KB, a POST's 16 KB body without a token {} KB each (ten at once), 63 empty fragments {} KB (the "
        "WebSocket client itself {} KB)".format(
            largest, kb["head_held"]["median"], kb["many_headers_peak"]["median"], kb["bodies_held"]["median"],
            kb["fragments_held"]["median"], kb["client_held"]["median"]))
    return (figure,)
