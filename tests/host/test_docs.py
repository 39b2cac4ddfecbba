# The README and the pages of docs/ hold together (issue 34, item 7): the README stays short, with a table of
# contents and a link to every page; every relative link and image of README.md and docs/*.md reaches a file
# that exists, and every #anchor a heading of the page it names (GitHub's slugs).
import os
import re

from tests.runtimes import ROOT

README = os.path.join(ROOT, "README.md")
DOCS = os.path.join(ROOT, "docs")
LINK = re.compile(r"(!?)\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _pages():
    return [README] + sorted(os.path.join(DOCS, name) for name in os.listdir(DOCS) if name.endswith(".md"))


def _prose(path):
    """(line number, line) of a markdown page outside its fenced code blocks, inline code spans removed."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            stripped = line.lstrip()
            if fence is None and stripped.startswith(("```", "~~~")):
                fence = stripped[:3]
            elif fence is not None:
                if stripped.startswith(fence):
                    fence = None
            else:
                yield number, re.sub(r"(`+)(?:(?!\1).)+\1", "", line.rstrip("\n"))


def slug(heading):
    """GitHub's anchor for a heading: lowercase, punctuation dropped but hyphens and underscores, spaces to hyphens."""
    text = heading.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    """Every anchor a page's headings make, duplicates numbered as GitHub numbers them (-1, -2...)."""
    made, seen = set(), {}
    fence = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            stripped = line.lstrip()
            if fence is None and stripped.startswith(("```", "~~~")):
                fence = stripped[:3]
                continue
            if fence is not None:
                fence = None if stripped.startswith(fence) else fence
                continue
            heading = re.match(r"#{1,6} +(.+?) *#* *$", line.rstrip("\n"))
            if heading:
                base = slug(heading.group(1))
                count = seen.get(base, 0)
                seen[base] = count + 1
                made.add(base if count == 0 else "{}-{}".format(base, count))
    return made


def links(path):
    """(line number, is an image, target) of every markdown link of a page outside code."""
    for number, line in _prose(path):
        for found in LINK.finditer(line):
            yield number, found.group(1) == "!", found.group(2)


def _local(target):
    return not re.match(r"[a-z][a-z0-9+.-]*:", target, re.I)


def test_the_readme_is_short_and_has_a_table_of_contents():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    assert len(text.split("\n")) <= 300, "README.md has {} lines: at most 300".format(len(text.split("\n")))
    contents = re.search(r"^## (?:Table of )?[Cc]ontents\n(.*?)\n## ", text, re.S | re.M)
    assert contents, "README.md has no '## Contents' section"
    listed = set(re.findall(r"\]\(#([^)]+)\)", contents.group(1)))
    own = {slug(h) for h in re.findall(r"^## (.+)$", text, re.M)} - {"contents", "table-of-contents"}
    assert own <= listed, "the table of contents leaves out: {}".format(sorted(own - listed))


def test_every_docs_page_is_linked_from_the_readme():
    targets = {os.path.normpath(os.path.join(ROOT, t.split("#")[0])) for _, _, t in links(README) if _local(t)}
    pages = [p for p in _pages() if p != README]
    assert len(pages) >= 13
    missing = [os.path.relpath(p, ROOT) for p in pages if p not in targets]
    assert not missing, "pages of docs/ the README does not link to: {}".format(missing)


def test_every_relative_link_and_anchor_resolves():
    broken = []
    known = {}
    for page in _pages():
        for number, image, target in links(page):
            if not _local(target):
                continue
            where = "{}:{}: {}".format(os.path.relpath(page, ROOT), number, target)
            path, _, anchor = target.partition("#")
            goal = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(goal):
                broken.append(where + " (no such file)")
            elif image and not re.search(r"\.(png|jpe?g|gif|svg|webp)$", goal, re.I):
                broken.append(where + " (not an image)")
            elif anchor and goal.endswith(".md"):
                if goal not in known:
                    known[goal] = anchors(goal)
                if anchor not in known[goal]:
                    broken.append(where + " (no such heading)")
    assert not broken, "\n".join(broken)


def test_every_screenshot_of_docs_is_shown_on_a_page():
    shown = {os.path.normpath(os.path.join(os.path.dirname(p), t)) for p in _pages() for _, image, t in links(p) if image}
    pictures = [n for n in os.listdir(DOCS) if n.endswith(".png")]
    assert pictures and all(os.path.join(DOCS, n) in shown for n in pictures), sorted(
        n for n in pictures if os.path.join(DOCS, n) not in shown)


def test_the_slug_rule():
    assert slug("Voice: voice notes heard, replies spoken") == "voice-voice-notes-heard-replies-spoken"
    assert slug("Your own tools: `tool_<name>.py`") == "your-own-tools-tool_namepy"
    assert slug("Reliability: the soak and fault injection (`make soak`)") == \
        "reliability-the-soak-and-fault-injection-make-soak"


def _let_go_declared():
    """{module: [scope, ...]} of every firmware package's LET_GO (its __init__.py), read from the source."""
    import ast

    firmware = os.path.join(ROOT, "firmware")
    found = {}
    for folder, _, names in os.walk(os.path.join(firmware, "mimi")):
        if "__init__.py" not in names:
            continue
        package = os.path.relpath(folder, firmware).replace(os.sep, ".")
        with open(os.path.join(folder, "__init__.py")) as f:
            tree = ast.parse(f.read())
        for node in tree.body:
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["LET_GO"]:
                for entry in ast.literal_eval(node.value).split():
                    stem, _, kinds = entry.partition(":")
                    found[package if stem == "." else package + "." + stem] = sorted(kinds.split(","))
    return found


def _table_after(page, caption):
    """The rows (lists of cells) of the first table after the line that starts with caption."""
    with open(os.path.join(DOCS, page)) as f:
        lines = f.read().split("\n")
    at = [i for i, line in enumerate(lines) if line.startswith(caption)][0]
    rows, started = [], False
    for line in lines[at + 1:]:
        if line.startswith("|"):
            started = True
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if not cells[0].startswith("---"):
                rows.append(cells)
        elif started:
            break
    return rows[1:]  # under the head


def test_what_loads_late_is_one_table_that_says_what_the_packages_declare():
    """docs/architecture.md's table of what loads late and what lets it go holds every module a package declares may
    be let go (LET_GO), with its scopes, and no other; the scopes' table is mimi/heap.py's SCOPES."""
    import ast

    declared = _let_go_declared()
    documented = {}
    for cells in _table_after("architecture.md", "What loads late, and what lets it go"):
        names = re.findall(r"`(mimi(?:\.[a-z_]+)*)`", cells[0])
        if cells[2] == "kept":
            assert not [name for name in names if name in declared], cells  # kept, but declared
            continue
        assert names, cells
        for name in names:
            documented[name] = sorted(kind.strip() for kind in cells[2].split(","))
    assert documented == declared, (sorted(set(documented) ^ set(declared)),
                                    [n for n in declared if documented.get(n, declared[n]) != declared[n]])
    with open(os.path.join(ROOT, "firmware", "mimi", "heap.py")) as f:
        scopes = [node for node in ast.parse(f.read()).body if isinstance(node, ast.Assign)
                  and [getattr(t, "id", None) for t in node.targets] == ["SCOPES"]][0]
    kinds = dict(entry.split(":") for entry in ast.literal_eval(scopes.value).split())
    table = {cells[0].strip("`"): cells[1] for cells in _table_after("architecture.md", "The scopes:")}
    assert table == {kind: "always" if when == "always" else "on a tight heap" for kind, when in kinds.items()}, table
