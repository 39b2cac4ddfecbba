# Device entry point: run the firmware (boot.py has already run) inside the crash guard.
from mimi.health import crashes


def start():
    from mimi import app  # imported inside the guard: a module that cannot load is a crash too

    app.run()


crashes.guarded(start)  # an escaping exception is counted (3 in a row: safe mode) and resets the board
