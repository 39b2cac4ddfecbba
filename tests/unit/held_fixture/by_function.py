from held_fixture.target import request  # noqa: F401
