# A module and its would-be holders for tests/unit/test_unload.py: names no other test imports, so whether the
# target is held depends on what that test loads and nothing else.
