# keep_file: the photo or file of this turn stays on flash under files/ instead of leaving with the turn.
import os

from mimi.storage import files
from mimi.tools.registry import Tool, ToolError

_COPIES_MAX = 99


class KeepFile(Tool):
    name = "keep_file"
    tier, acting, level = "operator", False, "autonomous"
    wants_turn = True  # the photo or file is this turn's
    description = (
        "Keep the photo or file the user sent in this message on the device's flash (under files/), "
        "when they ask you to keep, save or store it. Without this it is deleted after your reply."
    )
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "file name to keep it as, e.g. receipt.jpg"}},
        "required": [],
    }

    def run(self, input, turn):
        from mimi.agent import attachments

        item = turn.meta.get("media")
        if not isinstance(item, dict) or not files.exists(item.get("path") or ""):
            raise ToolError("this message carries no photo or file to keep")
        source = item["path"]
        ext = "." + source.rsplit(".", 1)[-1] if "." in source.rsplit("/", 1)[-1] else ""
        wanted = attachments.safe_name(input.get("name") or item.get("name") or "", "")
        if not wanted:
            wanted = "photo" + ext if item["kind"] == "image" else "file" + ext
        elif ext and "." not in wanted:
            wanted += ext
        folder = files.join(self.app.flash.root, "files")
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
        return "kept as {}".format(target[len(self.app.flash.root) + 1:])


TOOLS = (KeepFile,)
