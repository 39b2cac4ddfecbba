# Modules and their would-be holders for tests/unit/test_unload.py: names no other test imports, so what is loaded
# depends on that test alone. The modules heap.py may let go, with their scopes (mimi/heap.py):
LET_GO = "target:call tool_plain:tool tool_held:tool tool_setup:tool"
