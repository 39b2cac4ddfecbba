# A tool module as a built-in's (TOOLS, bound to the app) for test_unload.py: let go after its calls on a tight heap.


class Tool:
    name = "fixture_held"

    def __init__(self, app):
        self.app = app


TOOLS = [Tool]
