from held_fixture import target  # noqa: F401
