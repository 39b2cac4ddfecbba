# Skills: <data>/skills/<name>.md how-to notes; the prompt lists them, the model reads one when needed.
from mimi.platform import const, log
from mimi.storage import files

FOLDER = "skills"
SUFFIX = ".md"
SKILLS_MAX = const(16)  # skills listed in the system prompt
LINE_MAX = const(120)  # characters of one listed line ("- name: first line")
NAME_MAX = const(48)
_SHOW_MAX = const(8192)  # bytes skill_show prints
_HEAD_BYTES = const(512)  # bytes read to find a skill's first line
# The console commands (channels/commands.py add_lines): a str constant stays in flash.
_COMMANDS = (
    "\nskill_list\tskill_list\t0\t0\tlist the skills in <data>/skills\tmimi.agent.skills:skill_list(app)"
    "\nskill_show\tskill_show <name>\t1\t1\tprint one skill\tmimi.agent.skills:skill_show(app)"
    "\n"
)


def folder(flash):
    return files.join(flash.root, FOLDER)


def valid_name(name):
    """Letters, digits, _ and -, at most NAME_MAX: a skill name is never a path."""
    if not isinstance(name, str) or not 0 < len(name) <= NAME_MAX:
        return False
    for ch in name:
        if not ("a" <= ch <= "z" or "A" <= ch <= "Z" or "0" <= ch <= "9" or ch in "_-"):
            return False
    return True


def path_of(flash, name):
    """The file of skill `name`; ValueError for a name that is not a plain skill name."""
    if not valid_name(name):
        raise ValueError("a skill name is 1-{} letters, digits, _ or -, like 'weather_report'"
                         .format(NAME_MAX))
    return files.join(folder(flash), name + SUFFIX)


def names(flash):
    """Every skill's name, sorted (files with other names are ignored)."""
    found = []
    for file_name in files.listdir(folder(flash)):
        if file_name.endswith(SUFFIX) and valid_name(file_name[: -len(SUFFIX)]):
            found.append(file_name[: -len(SUFFIX)])
    return found


def first_line(flash, name):
    """The first non-empty line of a skill, without markdown header marks ("" when none)."""
    text = files.read_text(path_of(flash, name), _HEAD_BYTES) or ""
    for line in text.split("\n"):
        line = line.strip().lstrip("#").strip()
        if line:
            return line
    return ""


def summary(flash):
    """'- name: first line' per skill, sorted, at most SKILLS_MAX lines of LINE_MAX characters;
    "" when there are none. Depends only on the files, so the prompt stays cacheable."""
    all_names = names(flash)
    lines = []
    for name in all_names[:SKILLS_MAX]:
        head = first_line(flash, name)
        line = "- {}: {}".format(name, head) if head else "- " + name
        if len(line) > LINE_MAX:
            line = line[: LINE_MAX - 3] + "..."
        lines.append(line)
    if len(all_names) > SKILLS_MAX:
        lines.append("- ({} more not listed)".format(len(all_names) - SKILLS_MAX))
    return "\n".join(lines)


def setup(app):
    """Add the skill_list and skill_show console commands."""
    app.console.commands.add_lines(_COMMANDS)


async def skill_list(app):
    flash = app.flash
    found = names(flash)
    if not found:
        log("no skills yet: put <name>.md files in {}".format(folder(flash)))
    for name in found:
        log("  {}  {}".format(name, first_line(flash, name)))


async def skill_show(app, name):
    path = path_of(app.flash, name)
    text = files.read_text(path, _SHOW_MAX)
    if text is None:
        log("error: no skill '{}' (see skill_list)".format(name))
        return
    log(text)
    if files.size(path) > _SHOW_MAX:
        log("[... cut at {} bytes]".format(_SHOW_MAX))
