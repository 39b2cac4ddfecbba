# Seeded random faults: schedules the fakes' scripted faults at a rate and records what it injected.
import random
import threading

from host_sim import sse_replies

# Telegram: (kind, what it does). HTTP errors strike one of ERROR_METHODS, picked by the seed.
TELEGRAM_KINDS = (
    "tg_429",  # flood control, with retry_after
    "tg_409",  # another poller took over
    "tg_500",
    "tg_502",  # the proxy's HTML page
    "tg_reset_poll",  # the connection reset during a long poll (after the updates were taken)
    "tg_slow",  # a response slower than the client's read timeout
    "tg_malformed",  # a 200 with a truncated JSON body
    "tg_duplicate",  # the next update delivered twice
)
ANTHROPIC_KINDS = (
    "an_401", "an_403", "an_404", "an_413", "an_429", "an_500", "an_529",
    "an_stream_error",  # `event: error` mid-stream
    "an_cut",  # the TCP connection cut in the middle of an event
    "an_stall",  # no bytes for a while mid-stream
    "an_garbage",  # comments, unknown events, split data lines: still a good reply
    "an_long_line",  # one data line longer than the firmware's line cap
)
ERROR_METHODS = ("getUpdates", "sendMessage", "sendMessageDraft", "sendChatAction")
RETRY_AFTER_S = 1  # small, so a soak is not mostly waiting
SLOW_SECONDS = 50.0  # past the firmware's longest Telegram read timeout (long poll 30 s + 15 s)
STALL_SECONDS = 3.0  # mid-stream silence under the firmware's idle timeout: the reply completes
LONG_LINE_BYTES = 20000  # over the firmware's SSE line cap (16 KB)
REPLY_TEXT = "Chaos {} says hello."  # what the scripted replies say (a soak tells them from lost turns)


class Chaos:
    """Driven by random.Random(seed): each step() injects, with probability `rate` per attached
    fake, one fault of a kind drawn from that fake's kinds. `injected` lists every fault in order
    as {"step", "fake", "kind", "detail"}: the same seed and steps give the same list."""

    def __init__(self, seed, rate, telegram=None, anthropic=None, telegram_kinds=TELEGRAM_KINDS,
                 anthropic_kinds=ANTHROPIC_KINDS, error_methods=ERROR_METHODS,
                 slow_seconds=SLOW_SECONDS, stall_seconds=STALL_SECONDS):
        if not 0 <= rate <= 1:
            raise ValueError("the chaos rate is a probability, 0..1 (got {})".format(rate))
        for kind in tuple(telegram_kinds) + tuple(anthropic_kinds):
            if kind not in TELEGRAM_KINDS + ANTHROPIC_KINDS:
                raise ValueError("unknown fault kind {!r}".format(kind))
        self.seed, self.rate = seed, rate
        # One generator per fake: a seed gives the same faults whether one fake or both are attached.
        self._random = {fake: random.Random("{}/{}".format(seed, fake))
                        for fake in ("telegram", "anthropic")}
        self.telegram, self.anthropic = telegram, anthropic
        self.telegram_kinds, self.anthropic_kinds = tuple(telegram_kinds), tuple(anthropic_kinds)
        self.error_methods = tuple(error_methods)
        self.slow_seconds, self.stall_seconds = slow_seconds, stall_seconds
        self.steps = 0
        self.injected = []
        self._timer = None
        self._stop = threading.Event()

    # ---- scheduling ----

    def step(self):
        """One tick (a turn, a second...): maybe one fault per attached fake; returns the new ones."""
        self.steps += 1
        new = []
        for fake, kinds in (("telegram", self.telegram_kinds), ("anthropic", self.anthropic_kinds)):
            draw = self._random[fake]
            if getattr(self, fake) is not None and kinds and draw.random() < self.rate:
                new.append(self.inject(draw.choice(kinds)))
        return new

    def inject(self, kind):
        """Inject one fault of this kind now (its details drawn from the seed); returns its record."""
        if kind in TELEGRAM_KINDS:
            if self.telegram is None:
                raise ValueError("{} needs a fake Telegram".format(kind))
            detail = self._telegram(kind)
            fake = "telegram"
        elif kind in ANTHROPIC_KINDS:
            if self.anthropic is None:
                raise ValueError("{} needs a fake Anthropic".format(kind))
            detail = self._anthropic(kind)
            fake = "anthropic"
        else:
            raise ValueError("unknown fault kind {!r}".format(kind))
        record = {"step": self.steps, "fake": fake, "kind": kind, "detail": detail}
        self.injected.append(record)
        return record

    def counts(self):
        """{kind: how many times injected}."""
        out = {}
        for record in self.injected:
            out[record["kind"]] = out.get(record["kind"], 0) + 1
        return out

    # ---- the faults ----

    def _telegram(self, kind):
        tg, draw = self.telegram, self._random["telegram"]
        if kind in ("tg_429", "tg_500", "tg_502"):
            method = draw.choice(self.error_methods)
            status = int(kind[3:])
            tg.fail_next(method, status, retry_after=RETRY_AFTER_S if status == 429 else None)
            return {"method": method, "status": status}
        if kind == "tg_409":
            tg.conflict_second_poller()
            return {}
        if kind == "tg_reset_poll":
            tg.reset_connection_next("getUpdates")
            return {"method": "getUpdates"}
        if kind == "tg_slow":
            tg.slow_next("getUpdates", self.slow_seconds)
            return {"method": "getUpdates", "seconds": self.slow_seconds}
        if kind == "tg_malformed":
            tg.malformed_next("getUpdates")
            return {"method": "getUpdates"}
        tg.duplicate_next_update()
        return {}

    def _anthropic(self, kind):
        draw = self._random["anthropic"]
        said = REPLY_TEXT.format(len(self.injected) + 1)
        if kind[3:].isdigit():
            status = int(kind[3:])
            retry_after = RETRY_AFTER_S if status == 429 else None
            reply = sse_replies.error(status, retry_after=retry_after)
            detail = {"status": status}
        elif kind == "an_stream_error":
            reply = sse_replies.stream_error(said[:draw.randint(0, len(said))])
            detail = {"after_chars": len(reply.text_before)}
        elif kind == "an_cut":
            reply = sse_replies.cut(said[:draw.randint(0, len(said))])
            detail = {"after_chars": len(reply.text_before)}
        elif kind == "an_stall":
            split = draw.randint(1, len(said) - 1)
            reply = sse_replies.stall(said[:split], self.stall_seconds, said[split:])
            detail = {"after_chars": split, "seconds": self.stall_seconds}
        elif kind == "an_garbage":
            reply = sse_replies.garbage(said)
            detail = {}
        else:
            reply = sse_replies.long_line(LONG_LINE_BYTES)
            detail = {"bytes": LONG_LINE_BYTES}
        self.anthropic.script(reply)
        return detail

    # ---- timed mode, for fakes run as processes ----

    def start(self, interval, log=print):
        """step() every `interval` seconds from a daemon thread, logging each fault."""
        def tick():
            while not self._stop.wait(interval):
                for record in self.step():
                    log("chaos: step {} {} {}".format(record["step"], record["kind"],
                                                      record["detail"]))

        self._timer = threading.Thread(target=tick, name="chaos", daemon=True)
        self._timer.start()

    def stop(self):
        self._stop.set()
        if self._timer is not None:
            self._timer.join()
            self._timer = None


def add_arguments(parser):
    """--chaos-seed/--chaos-rate/--chaos-interval for a fake's command line."""
    parser.add_argument("--chaos-seed", type=int, default=None,
                        help="inject seeded random faults (reproducible with the same seed)")
    parser.add_argument("--chaos-rate", type=float, default=0.1,
                        help="probability of a fault per interval (default 0.1)")
    parser.add_argument("--chaos-interval", type=float, default=1.0,
                        help="seconds between chaos draws (default 1)")


def from_arguments(args, **fakes):
    """A started Chaos for the parsed options, or None without --chaos-seed."""
    if args.chaos_seed is None:
        return None
    chaos = Chaos(args.chaos_seed, args.chaos_rate, **fakes)
    chaos.start(args.chaos_interval, lambda line: print(line, flush=True))
    return chaos
