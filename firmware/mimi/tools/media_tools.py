# keep_file: the photo or file of this turn stays on flash under files/ instead of leaving with the turn.
import os

from mimi.storage import files
from mimi.tools.registry import ToolError

_app = [None]
_COPIES_MAX = 99


def setup(app):
    _app[0] = app


class KeepFile:
    name = "keep_file"
    tier = "operator"
    description = (
        "Keep the photo or file the user sent in this message on the device's flash (under files/), "
        "when they ask you to keep, save or store it. Without this it is deleted after your reply."
    )
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "file name to keep it as, e.g. receipt.jpg"}},
        "required": [],
    }

    def run(self, input):
        from mimi.agent import attachments
        from mimi.tools import registry

        meta = registry.current.get("meta")
        item = meta.get("media") if isinstance(meta, dict) else None
        if not isinstance(item, dict) or not files.exists(item.get("path") or ""):
            raise ToolError("this message carries no photo or file to keep")
        source = item["path"]
        ext = "." + source.rsplit(".", 1)[-1] if "." in source.rsplit("/", 1)[-1] else ""
        wanted = attachments.safe_name(input.get("name") or item.get("name") or "", "")
        if not wanted:
            wanted = "photo" + ext if item["kind"] == "image" else "file" + ext
        elif ext and "." not in wanted:
            wanted += ext
        folder = files.join(_app[0].flash.root, "files")
        stem, dot, suffix = wanted.rpartition(".")
        if not dot:
            stem, suffix = wanted, ""
        target = files.join(folder, wanted)
        n = 1
        while files.exists(target):  # never over another file
            n += 1
            if n > _COPIES_MAX:
                raise ToolError("files/ already holds too many files named like {}".format(wanted))
            target = files.join(folder, "{}-{}{}".format(stem, n, "." + suffix if dot else ""))
        os.rename(source, target)
        return "kept as {}".format(target[len(_app[0].flash.root) + 1:])


TOOLS = (KeepFile(),)
