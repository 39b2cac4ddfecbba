from held_fixture import tool_held  # noqa: F401
