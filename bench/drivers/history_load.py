# Time to load the last 20 messages of session files of different lengths (both runtimes).
#   <python> bench/drivers/history_load.py LIB SESSIONS_DIR REPEATS STEM [STEM...]
import sys

sys.path.insert(0, "bench/drivers")
import common  # noqa: E402

LIB, FOLDER, REPEATS = sys.argv[1], sys.argv[2], int(sys.argv[3])
STEMS = sys.argv[4:]
common.use_firmware(LIB)

from mimi.storage.sessions import Sessions  # noqa: E402

sessions = Sessions(FOLDER)
results = {}
for stem in STEMS:
    channel, chat_id = stem.split("_", 1)
    times = []
    count = len(sessions.history(channel, chat_id))  # untimed: imports and caches warm up
    for _ in range(REPEATS):
        start = common.now_us()
        count = len(sessions.history(channel, chat_id))
        times.append(common.elapsed_us(start) / 1000)
    results[stem] = {"ms": times, "messages": count}
common.report(results)
