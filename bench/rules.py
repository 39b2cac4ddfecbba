# Local rules (issue 21): a pin edge to the GPIO write its rule makes (p50/p99), what one edge allocates, the
# heap 16 rules hold (ROMFS form), and the tokens a day of readings costs, judged by the model or by a rule.
from bench.drivers_run import run_driver
from bench.setup import API_KEY, free_port, micropython, reps, runtime_command, standard_flash
from bench.stats import summary, tail
from host_sim.fake_anthropic import text

HEAP = "1024K"
EDGES = 200  # per run; BENCH_QUICK: 50
READINGS = 5  # of the same standing order, by the model and by the rule
DAY_READINGS = 86400 // 60  # the standing order reads every 60 s
EDGE_GOAL_MS = 20  # p99, MicroPython


def _one(fake, runtime, n):
    fake.reset()
    fake.brain = lambda body, chunk, delay: text("WATCH_OK")  # the model's verdict on each reading
    flash = standard_flash("rules-{}-{}".format(runtime, n))
    lib = runtime_command(runtime)[1]
    try:
        result = run_driver(micropython(HEAP), "rules_edge.py", lib, flash, fake.url, API_KEY, free_port(),
                            reps(EDGES, 50), READINGS)
    finally:
        fake.brain = None
    result["requests"] = len(fake.requests)
    return result


def measure(fake, log):
    out = {"heap": HEAP, "goal": "edge to action p99 <= {} ms on MicroPython; 0 tokens a day for the rule".format(
        EDGE_GOAL_MS)}
    for runtime in ("mpy", "romfs"):
        runs = [_one(fake, runtime, n) for n in range(reps(2, 1))]
        latencies = [us / 1000 for run in runs for us in run["latency_us"]]
        last = runs[-1]
        figures = {
            "edge_to_action_ms": tail(latencies, 2),
            "edge_alloc_bytes": summary([b for run in runs for b in run["edge_alloc"]], 0),
            "edge_in_1k_holes": all(run["edge_in_1k_holes"] for run in runs),
            "holes_refuse_1500_bytes": not any(run["check_of_the_check"] for run in runs),  # the check works
            "first_edge_ms": round(last["first_edge_us"] / 1000, 1),
            "engine_and_first_rule_kb": round(last["engine_and_first"] / 1024, 1),
            "sixteen_rules_kb": round(last["sixteen_rules"] / 1024, 1),
            "per_rule_bytes": last["per_rule"],
            "model_tokens_per_reading": last["model_tokens_per_reading"],
            "model_tokens_per_day": last["model_tokens_per_reading"] * DAY_READINGS,
            "rule_tokens_per_day": last["rule_tokens"] * DAY_READINGS // READINGS,
            "model_requests": last["requests"],  # all of them the model watcher's: the rule asked nothing
        }
        log("  rules, {}: edge to action p50 {} ms, p99 {} ms (the first {} ms); an edge allocates {} B in all, "
            "none over 1 KB at once: {}; 16 rules {} KB ({} B each after the engine's {} KB); tokens a day: model "
            "{}, rule {}".format(
                runtime, figures["edge_to_action_ms"]["median"], figures["edge_to_action_ms"]["p99"],
                figures["first_edge_ms"], figures["edge_alloc_bytes"]["median"], figures["edge_in_1k_holes"],
                figures["sixteen_rules_kb"], figures["per_rule_bytes"],
                figures["engine_and_first_rule_kb"], figures["model_tokens_per_day"],
                figures["rule_tokens_per_day"]))
        out[runtime] = figures
    return out
