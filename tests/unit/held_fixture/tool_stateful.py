# A tool module as a built-in's (TOOLS, bound to the app) for test_unload.py's Registry.let_go test.
KEEPS_STATE = True  # as gpio's: the registry keeps it loaded


class Tool:
    name = "fixture_stateful"

    def __init__(self, app):
        self.app = app


TOOLS = [Tool]
