# Device entry point: run the firmware (boot.py has already run).
from mimi import app

app.run()
