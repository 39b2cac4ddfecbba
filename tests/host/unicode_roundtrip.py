# Run by test_unicode_props.py under both runtimes: each input line (JSON text) through the decoding
# seam, then through the session store and back; prints one JSON line of what came out.
import json
import sys

for _p in ("host_sim/standins", "firmware"):
    sys.path.insert(0, _p)

from mimi import jsontext  # noqa: E402
from mimi.storage.sessions import Sessions  # noqa: E402

folder, source = sys.argv[1], sys.argv[2]
decoded = []
with open(source, "rb") as f:
    for line in f:
        decoded.append(jsontext.loads(line))
store = Sessions(folder)
for text in decoded:
    store.append("ws", "props", "user", text, ts=1)
stored = [m["content"] for m in store.history("ws", "props", limit=len(decoded) + 1)]
print(json.dumps({"decoded": decoded, "stored": stored}))
