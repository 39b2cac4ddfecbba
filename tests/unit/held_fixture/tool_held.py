# A tool module as a built-in's (TOOLS, bound to the app) for test_unload.py's Registry.let_go test.


class Tool:
    name = "fixture_held"

    def __init__(self, app):
        self.app = app


TOOLS = [Tool]
