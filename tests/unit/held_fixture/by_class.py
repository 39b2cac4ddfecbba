from held_fixture.target import Refused  # noqa: F401
