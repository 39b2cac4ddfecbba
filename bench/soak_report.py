# The soak's bookkeeping: turn outcomes, heap and flash samples, the files left on the image, the report.
import json

from host_sim import lfs_flash
from host_sim.chaos import REPLY_TEXT

BLOCK = lfs_flash.BLOCK_SIZE
ERROR_MARK = "\u26a0"  # the firmware's Telegram error replies start with a warning sign
SCRIPTED_MARK = REPLY_TEXT.split("}", 1)[1]  # " says hello.": in every complete chaos-scripted reply


class Ledger:
    """Every turn sent and every answer seen, per client; heap and flash samples per window."""

    def __init__(self, window):
        self.window = window
        self.turns = []  # {"client", "tag", "sent_at"}
        self.answers = {}  # client -> [(tag or None, text)] in arrival order, windows by turn
        self.heap = {}  # window -> [used bytes after a collection]
        self.heap_samples = []  # (turns done, used bytes), in order
        self.flash = {}  # window -> changed bytes
        self.crashes = []  # (turns done, what happened)
        self._image = None

    def turn(self, client, tag, sent_at):
        self.turns.append({"client": client, "tag": tag, "sent_at": sent_at})
        return len(self.turns)

    def heap_sample(self, turns_done, used):
        self.heap.setdefault(self.window_of(turns_done), []).append(used)
        self.heap_samples.append((turns_done, used))

    def window_of(self, turns_done):
        return max(0, turns_done - 1) // self.window

    def flash_sample(self, turns_done, image_path):
        """Blocks that changed since the last sample, counted in bytes (a lower bound of what was
        written: a block rewritten twice between two samples counts once)."""
        with open(image_path, "rb") as f:
            now = f.read()
        if self._image is not None:
            changed = sum(1 for i in range(0, len(now), BLOCK)
                          if now[i:i + BLOCK] != self._image[i:i + BLOCK])
            window = self.window_of(turns_done)
            self.flash[window] = self.flash.get(window, 0) + changed * BLOCK
        self._image = now


def outcomes(ledger, answers):
    """Classify each turn from {client: [(window index, text)]}: the text of every message the bot
    sent to that client, with the index of the client's turn it arrived after.

    A turn is answered when some answer carries its tag (the fake's default brain echoes it) or a
    complete chaos-scripted reply arrived in its window; a clear error when only something else
    did (an error starting with a warning sign, a refusal such as a rate limit: listed in
    error_texts); lost otherwise. Duplicates: every answer beyond the first one of a turn."""
    by_client = {}
    for t in ledger.turns:
        by_client.setdefault(t["client"], []).append(t["tag"])
    answered = errors = lost = duplicates = 0
    lost_tags, error_texts = [], {}
    for client, tags in by_client.items():
        got = answers.get(client, [])
        for index, tag in enumerate(tags):
            tagged = [text for _, text in got if tag_in(tag, text)]
            untagged = [text for w, text in got if w == index and not any(
                tag_in(t, text) for t in tags)]
            replies = [text for text in untagged
                       if SCRIPTED_MARK in text and not text.startswith(ERROR_MARK)]
            if tagged or replies:  # a scripted reply (chaos' garbage, stall) does not echo the tag
                answered += 1
                duplicates += len(tagged) + len(replies) - 1
            elif untagged:
                errors += 1
                duplicates += len(untagged) - 1
                key = untagged[0][:80]
                error_texts[key] = error_texts.get(key, 0) + 1
            else:
                lost += 1
                lost_tags.append(tag)
    return {"answered": answered, "clear_errors": errors, "lost": lost,
            "duplicates": duplicates, "lost_tags": lost_tags[:20],
            "error_texts": sorted(error_texts.items(), key=lambda kv: -kv[1])[:10]}


def tag_in(tag, text):
    # "soak-tg3-12" must not match inside "soak-tg3-120": tags end with a "." in every message
    return (tag + ".") in text


def unreadable_files(image_path):
    """Files on the image that cannot be read back, or whose JSON / JSON lines do not parse."""
    bad = []
    try:
        files = lfs_flash.image_files(image_path)
    except Exception as exc:  # the image itself does not mount
        return ["(image) {}".format(exc)]
    for name, data in sorted(files.items()):
        if name.endswith(".der"):  # a CA certificate (SOAK_FORM=romfs): binary, read by mbedTLS
            continue
        try:
            text = data.decode("utf-8")
            if name.endswith(".jsonl"):
                for line in text.splitlines():
                    if line.strip():
                        json.loads(line)
            elif name.endswith(".json"):
                json.loads(text)
        except ValueError as exc:
            bad.append("{}: {}".format(name, exc))
    return bad


def heap_line(ledger, turns):
    """[{turns "0-99", max and min used KB (None: no sample), samples}] for every window of the
    run. A sample taken while a turn is in work is higher (its request, history, stream buffers)
    than one taken between turns: the max is the high-water, the min the floor."""
    out = []
    for window in range(max(1, (turns + ledger.window - 1) // ledger.window)):
        samples = ledger.heap.get(window, [])
        out.append({"turns": "{}-{}".format(window * ledger.window, (window + 1) * ledger.window - 1),
                    "max_used_kb": round(max(samples) / 1024, 1) if samples else None,
                    "min_used_kb": round(min(samples) / 1024, 1) if samples else None,
                    "samples": len(samples)})
    return out


def flash_line(ledger):
    out = []
    for window in sorted(ledger.flash):
        out.append({"turns": "{}-{}".format(window * ledger.window, (window + 1) * ledger.window - 1),
                    "bytes_per_turn": round(ledger.flash[window] / ledger.window)})
    return out


def drift_kb(line, key="max_used_kb"):
    """Heap high-water (or floor) of the last sampled window minus the first's (a leak shows as a
    steady rise)."""
    sampled = [w[key] for w in line if w[key] is not None]
    if len(sampled) < 2:
        return 0.0
    return round(sampled[-1] - sampled[0], 1)


def table(result):
    rows = [
        ("turns", "{} ({})".format(result["turns"], " ".join(
            "{}:{}".format(k, v) for k, v in result["turns_per_client"].items()))),
        ("answered", result["answered"]),
        ("clear errors", result["clear_errors"]), ("lost", result["lost"]),
        ("duplicates", result["duplicates"]), ("crashes", result["crashes"]),
        ("resets", result.get("resets")), ("MemoryErrors", result.get("memory_errors")),
        ("unreadable files", len(result["unreadable_files"])),
        ("faults injected", result["faults_injected"]),
        ("heap drift first->last window", "high-water {} KB, floor {} KB".format(
            result["heap_drift_kb"], result["heap_floor_drift_kb"])),
        ("flash written per turn", "{} bytes".format(result["flash_bytes_per_turn"])),
        ("duration", "{} s (the end's wait for Telegram: {} s)".format(
            result["duration_s"], result["drain_s"])),
    ]
    lines = ["{:<32} {}".format(k, v) for k, v in rows]
    lines.insert(0, "{:<32} {} at -X heapsize={} ({}){}{}".format(
        "form", result.get("runtime"), result.get("heap"), result.get("heap_why", ""),
        ", TLS" if result.get("tls") else "", ", small-board mode" if result.get("small_board") else ""))
    lines.append("heap per window, KB used after a collection (high-water/floor):")
    lines.append("  " + "  ".join("{}:{}/{}".format(w["turns"], w["max_used_kb"] or "-",
                                                    w["min_used_kb"] or "-")
                                  for w in result["heap_line"]))
    lines.append("flash changed per turn, per window (bytes):")
    lines.append("  " + "  ".join("{}:{}".format(w["turns"], w["bytes_per_turn"])
                                  for w in result["flash_line"]))
    return "\n".join(lines)
