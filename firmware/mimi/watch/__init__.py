# Watchers: LLM-judged monitors of a pin, the chip's temperature, a tool's result or a JSON field on the web.


def setup(app):
    """Create the watcher service (app.watchers) and its console commands; after the system channel."""
    from mimi.watch import commands
    from mimi.watch.service import Watchers

    app.watchers = Watchers(app)
    commands.setup(app)
    return app.watchers
