# Peak heap of a voice-note turn against a text turn (the note streamed from flash to the speech service, never
# held whole), and the time from the note reaching the agent to its transcript shown.
import os

from bench.drivers_run import run_driver
from bench.heap import HEAP
from bench.setup import API_KEY, chat_replies, fresh_dir, free_port, micropython, reps, runtime_command, standard_flash
from bench.stats import summary
from host_sim.fake_anthropic import text
from host_sim.fake_speech import FakeSpeech
from host_sim.ogg_audio import ogg_opus

NOTE_SECONDS = 20  # about 160 KB of Ogg/Opus: a voice note of a minute is 100-300 KB
SPEECH_KEY = "sk-bench-speech-0123456789"
GOAL_KB = 16  # issue 24: a voice turn's peak within 16 KB of a text turn's


def _one(fake, speech, runtime, n, note):
    fake.reset()
    speech.reset()
    speech.script_transcript(*["Please water the tomatoes in the garden at seven tonight."] * 2)
    chat_replies(fake, [text("Warmed up.")] + [text("I will water the tomatoes at seven. " * 10, chunk=32)] * 3)
    flash = standard_flash("voice-{}-{}".format(runtime, n), sessions=("cli_console",))
    lib = runtime_command(runtime)[1]
    try:
        return run_driver(micropython(HEAP), "voice_heap.py", lib, flash, fake.url, API_KEY, free_port(),
                          speech.url, SPEECH_KEY, note)
    finally:
        fake.brain = None


def measure(fake, log, runtimes=("mpy", "romfs")):
    note = os.path.join(fresh_dir("voice-note"), "note.ogg")
    with open(note, "wb") as f:
        f.write(ogg_opus(NOTE_SECONDS))
    out = {"heap": HEAP, "note_kb": os.path.getsize(note) // 1024, "goal_kb": GOAL_KB}
    with FakeSpeech(api_key=SPEECH_KEY) as speech:
        for runtime in runtimes:
            runs = [_one(fake, speech, runtime, n, note) for n in range(reps(3))]
            delta = summary([(r["voice_peak"] - r["text_peak"]) / 1024 for r in runs], 1)
            out[runtime] = {"text_peak_kb": summary([r["text_peak"] / 1024 for r in runs], 1),
                            "voice_peak_kb": summary([r["voice_peak"] / 1024 for r in runs], 1),
                            "voice_above_text_kb": delta,
                            "to_transcript_ms": summary([r["to_transcript_ms"] for r in runs
                                                         if r["to_transcript_ms"] is not None], 0),
                            "failed_turns": len([r for r in runs if not r["ok"]])}
            log("  voice turn heap, {}: text turn peak {} KB, {} KB voice note turn peak {} KB (+{} KB; goal {} KB); "
                "note to transcript {} ms".format(runtime, out[runtime]["text_peak_kb"]["median"], out["note_kb"],
                                                  out[runtime]["voice_peak_kb"]["median"], delta["median"], GOAL_KB,
                                                  out[runtime]["to_transcript_ms"]["median"]))
    return out
