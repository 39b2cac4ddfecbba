# Not declared: it keeps a class of kept_by_name at its top level, as Telegram's sender keeps HTTPError.
from heap_fixture.kept_by_name import Refused  # noqa: F401
