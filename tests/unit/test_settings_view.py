# The web app's Settings view and the settings' descriptions (settings/notes.py): loaded for the view's answer and let
# go with its scope (mimi/heap.py), on every board: a .mpy module's constants are heap while it is loaded.
import json
import sys

from stub_app import stub_app
from support import remove_tree, run

from mimi import heap
from mimi.gateway import views


def test_the_settings_view_loads_the_descriptions_for_its_answer_and_lets_them_go():
    app = stub_app("settings-view")
    try:
        heap.forget("mimi.settings.notes")
        frame = json.loads(run(views.answer(app, "settings", {"type": "settings"})))
        rows = [row for row in frame["settings"] if row[:2] == ["llm_config", "max_tokens"]]
        assert rows[0][5] == "Most tokens in one reply"  # read for the answer ...
        assert "mimi.settings.notes" not in sys.modules  # ... and let go with the view's scope, on every board
    finally:
        remove_tree(app.top)
