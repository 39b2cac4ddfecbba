# Skills: the bounded, sorted list for the system prompt, and names that can never be paths.
from support import raises, remove_tree, tempdir, write

from mimi.agent import skills
from mimi.storage import files
from mimi.storage.layout import Flash


def _flash():
    flash = Flash(files.join(tempdir("skills"), "data"))
    flash.seed()
    files.makedirs(skills.folder(flash))
    return flash


def _cleanup(flash):
    remove_tree(flash.root.rsplit("/", 1)[0])


def test_no_skills_is_an_empty_summary():
    flash = Flash(files.join(tempdir("skills"), "data"))
    try:
        assert skills.summary(flash) == ""  # not even a folder
    finally:
        remove_tree(flash.root.rsplit("/", 1)[0])


def test_summary_lists_name_and_first_line_sorted():
    flash = _flash()
    try:
        folder = skills.folder(flash)
        write(folder + "/weather.md", "\n# Weather report\n\nCall get_weather for the owner's city.\n")
        write(folder + "/Alarm-clock.md", "Wake the owner with a cron job\nmore\n")
        write(folder + "/empty.md", "")
        write(folder + "/notes.txt", "not a skill")
        write(folder + "/bad name.md", "spaces are not allowed")
        assert skills.summary(flash) == (
            "- Alarm-clock: Wake the owner with a cron job\n- empty\n- weather: Weather report")
        assert skills.names(flash) == ["Alarm-clock", "empty", "weather"]
    finally:
        _cleanup(flash)


def test_summary_is_bounded():
    flash = _flash()
    try:
        folder = skills.folder(flash)
        for i in range(skills.SKILLS_MAX + 3):
            write("{}/s{:02d}.md".format(folder, i), "x" * 500 + "\n")
        lines = skills.summary(flash).split("\n")
        assert len(lines) == skills.SKILLS_MAX + 1
        assert lines[0].startswith("- s00: xxx") and lines[-2].startswith("- s15:")
        assert lines[-1] == "- (3 more not listed)"
        assert max(len(line) for line in lines) == skills.LINE_MAX
    finally:
        _cleanup(flash)


def test_names_cannot_escape_the_folder():
    flash = _flash()
    try:
        for bad in ("../config/SOUL", "/etc/passwd", "a/b", "", "x" * 49, "..", "a.b"):
            assert "skill name" in str(raises(ValueError, skills.path_of, flash, bad))
        assert skills.path_of(flash, "ok_name-1") == skills.folder(flash) + "/ok_name-1.md"
    finally:
        _cleanup(flash)
