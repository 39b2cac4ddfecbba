# mimi/table.py, the one reader of the tables held as constants (settings, console commands, built-in tools):
# a row found by its leading fields, its fields read in place, str and bytes alike.
from mimi import table

TEXT = "\nstatus\tstatus\t0\t0\twhat runs\t\nchat\tchat <text>\t1\t-1\ttalk\tmimi.x:run(app)\t2\n"
DATA = b"\nwifi\tssid\ttext\t\t0\nwifi\tpassword\ttext\t\t3\nllm\tmodel\ttext\tclaude\t0\n"


def test_a_row_is_found_by_its_leading_fields_in_str_and_bytes():
    at = table.find(TEXT, "chat")
    assert TEXT[at:].startswith("chat <text>\t")
    at = table.find(DATA, "wifi", "password")
    assert DATA[at:].startswith(b"text\t\t3\n")
    assert table.field(DATA, at, 2) == b"3" and table.field(DATA, at, 1) == b""


def test_no_match_across_fields_or_rows():
    assert table.find(TEXT, "stat") == -1  # a name's prefix
    assert table.find(DATA, "wifi\tssid") == -1  # a tab inside a name
    assert table.find(DATA, "ssid") == -1  # a second field is not a name
    assert table.find(DATA, "0\nwifi", "password") == -1  # a newline inside a name
    assert table.find(DATA, "llm", "model", "text", "claude", "0") == -1  # the row's last field has no tab after


def test_rows_fields_and_the_row_around_a_place():
    starts = list(table.rows(DATA))
    assert [table.field(DATA, at) for at in starts] == [b"wifi", b"wifi", b"llm"]
    assert table.fields(DATA, starts[2]) == ["llm", "model", "text", "claude", "0"]
    assert [table.field(TEXT, at) for at in table.rows(TEXT)] == ["status", "chat"]
    middle = table.find(TEXT, "chat") + 3
    assert TEXT[table.start(TEXT, middle):table.end(TEXT, middle)] == "chat\tchat <text>\t1\t-1\ttalk\tmimi.x:run(app)\t2"
    assert table.field(TEXT, table.find(TEXT, "chat"), 5) == "2"  # the last field, up to the newline


def test_a_field_compared_in_place_matches_it_whole():
    first = next(table.rows(DATA))
    assert table.has(DATA, first, 1, "ssid")
    assert not table.has(DATA, first, 1, "ssi") and not table.has(DATA, first, 1, "ssidx")
    last = list(table.rows(DATA))[2]
    assert table.has(DATA, last, 4, "0")  # the row's last field: a newline after it
    assert table.has(TEXT, table.find(TEXT, "status"), 4, "")  # an empty field


def test_a_table_without_a_last_newline_reads_to_its_end():
    data = b"\na\t1\nb\t2"
    assert [table.fields(data, at) for at in table.rows(data)] == [["a", "1"], ["b", "2"]]
    assert table.field(data, table.find(data, "b")) == b"2" and table.has(data, table.find(data, "b"), 0, "2")
