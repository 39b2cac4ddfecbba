# A tool module as a built-in's, with a setup(app) (as one that adds a console command, a hook or a subscription has)
# and a tool that waits: test_unload.py's calls at once from the agent, a watcher, a rule and an MCP client. It keeps
# nothing at its top level: what it must remember is the app's.


class Slow:
    name = "fixture_slow"
    wants_turn = True

    def __init__(self, app):
        self.app = app

    async def run(self, input, turn):
        self.app.fixture_ran.append(turn.channel)
        await self.app.fixture_go.wait()
        return {"for": turn.channel}


class Quick:
    name = "fixture_quick"

    def __init__(self, app):
        self.app = app

    def run(self, input):
        return "done"


def setup(app):
    app.fixture_set_up += 1


TOOLS = (Slow, Quick)
