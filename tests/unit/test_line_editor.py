# The console's line editor, byte by byte as a terminal sends them: editing keys, history, secrets.
from mimi.channels.line_editor import CANCEL, LineEditor

UP, DOWN, LEFT, RIGHT, HOME, END, DELETE = (
    b"\x1b[A", b"\x1b[B", b"\x1b[D", b"\x1b[C", b"\x1b[H", b"\x1b[F", b"\x1b[3~")


class Screen:
    """A tiny terminal: applies what the editor writes (text, \\b, ESC[nC/D, ESC[K) to one row."""

    def __init__(self):
        self.row, self.col = [], 0

    def write(self, text):
        i = 0
        while i < len(text):
            ch = text[i]
            if ch == "\x1b":
                j = i + 2
                while not text[j].isalpha():
                    j += 1
                n = int(text[i + 2:j] or "1")
                if text[j] == "D":
                    self.col -= n
                elif text[j] == "C":
                    self.col += n
                elif text[j] == "K":
                    del self.row[self.col:]
                i = j + 1
                continue
            if ch == "\b":
                self.col -= 1
            elif ch == "\n":  # the next line starts empty
                self.row, self.col = [], 0
            elif ch == "\r":
                pass
            else:
                if self.col < len(self.row):
                    self.row[self.col] = ch
                else:
                    self.row.append(ch)
                self.col += 1
            i += 1

    @property
    def text(self):
        return "".join(self.row).rstrip()


def _editor(echo=True):
    screen = Screen()
    return LineEditor(screen.write, echo, ("set_api_key", "wifi_set")), screen


def _type(editor, data):
    if isinstance(data, str):
        data = data.encode()
    results = []
    for code in data:
        out = editor.feed(code)
        if out is not None:
            results.append(out)
    return results


def test_typing_and_enter_give_the_line_crlf_once():
    editor, screen = _editor()
    _type(editor, "chat hello")
    assert screen.text == "chat hello"
    assert _type(editor, "\r\n") == ["chat hello"]
    assert screen.text == "" and editor.chars == []
    assert _type(editor, "x\n") == ["x"]


def test_cursor_keys_insert_and_delete_in_the_middle():
    editor, screen = _editor()
    _type(editor, b"chat helo" + LEFT + b"l" + HOME + b"# " + END + b"!")
    assert screen.text == "# chat hello!" and "".join(editor.chars) == "# chat hello!"
    _type(editor, HOME + DELETE + DELETE + b"\x05" + b"\x7f")  # Ctrl-E, backspace
    assert screen.text == "chat hello"
    _type(editor, LEFT + LEFT + b"\x0b")  # Ctrl-K cuts to the end
    assert screen.text == "chat hel"
    _type(editor, b"\x17")  # Ctrl-W cuts a word
    assert screen.text == "chat" and editor.cursor == 5
    assert _type(editor, b"hi\r") == ["chat hi"]


def test_up_and_down_walk_the_history_and_come_back_to_the_draft():
    editor, screen = _editor()
    _type(editor, "chat one\nstatus\nstatus\n")
    assert editor.history == ["chat one", "status"]  # a repeat is kept once
    _type(editor, "dra")
    _type(editor, UP)
    assert screen.text == "status"
    _type(editor, UP + UP + UP)
    assert screen.text == "chat one"
    _type(editor, DOWN)
    assert screen.text == "status"
    _type(editor, DOWN)
    assert screen.text == "dra"
    _type(editor, UP + UP)
    assert _type(editor, b" again\n") == ["chat one again"]


def test_history_works_without_echo_too_and_stays_bounded():
    editor, _ = _editor(echo=False)
    for n in range(20):
        _type(editor, "chat {}\n".format(n))
    assert len(editor.history) == 12 and editor.history[-1] == "chat 19"
    assert _type(editor, UP + b"\n") == ["chat 19"]


def test_secret_arguments_show_as_stars_and_stay_out_of_history():
    editor, screen = _editor()
    _type(editor, "set_api_key sk-ant-123")
    assert screen.text == "set_api_key " + "*" * 10
    _type(editor, LEFT + LEFT + b"X")
    assert screen.text == "set_api_key " + "*" * 11
    assert _type(editor, b"\r") == ["set_api_key sk-ant-1X23"]
    assert editor.history == []
    _type(editor, UP)
    assert screen.text == ""


def test_a_pasted_line_asks_where_its_secret_starts_once_a_word_not_once_a_character():
    screen, asked = Screen(), []

    def secret_from(line):  # the console's rule for one command: its second argument is the secret
        asked.append(line)
        words = line.split(" ")
        return len(words[0]) + len(words[1]) + 2 if words[0] == "llm_key" and len(words) > 2 and words[2] else -1

    editor = LineEditor(screen.write, True, secret_from)
    _type(editor, "chat " + "w" * 900 + " and more")
    assert len(asked) <= 8  # at each space and word start: not 910 times, a longer line each time
    assert screen.text == "chat " + "w" * 900 + " and more"
    _type(editor, b"\x15llm_key local sk-local-1234")  # Ctrl-U, then a command with a secret
    assert screen.text == "llm_key local " + "*" * 13
    _type(editor, HOME + b"\x1b[C" * 9 + b"X")  # the name edited in the middle: the stars move with it
    assert screen.text == "llm_key lXocal " + "*" * 13
    _type(editor, END + b"\x7f" * 14)  # back to before the secret's word began
    assert screen.text == "llm_key lXocal"


def test_ctrl_c_throws_the_line_away_and_utf8_counts_as_one_character():
    editor, screen = _editor()
    assert _type(editor, b"chat oops\x03") == [CANCEL]
    assert editor.chars == []
    _type(editor, "chat caf\u00e9 \U0001f600".encode() + LEFT + b"!")
    assert "".join(editor.chars) == "chat caf\u00e9 !\U0001f600"
    assert _type(editor, b"\x7f\x7f\n") == ["chat caf\u00e9\U0001f600"]


def test_unknown_escape_sequences_and_the_line_cap_are_harmless():
    editor, _ = _editor()
    _type(editor, b"\x1b[15~\x1bOPab\x1b[1;5C")
    assert "".join(editor.chars) == "ab"
    editor.line_max = 5
    _type(editor, "cdefgh")
    assert "".join(editor.chars) == "abcde"


def test_tab_completes_command_names_in_the_first_word():
    screen = Screen()
    names = ["help", "heap_info", "memory_read", "memory_write", "status"]
    editor = LineEditor(screen.write, True, (), names=lambda: names, prompt="mimi> ")
    _type(editor, "sta\t")
    assert "".join(editor.chars) == "status "
    _type(editor, b"\x15" + b"mem\t")  # Ctrl-U, then mem: the common start memory_
    assert "".join(editor.chars) == "memory_"
    written = []
    editor.write = lambda text: (written.append(text), screen.write(text))
    _type(editor, "\t")  # nothing more in common: the choices are listed, the line drawn again
    assert "memory_read  memory_write" in "".join(written) and "mimi> " in "".join(written)
    assert screen.text == "mimi> memory_"
    _type(editor, "w\t")
    assert _type(editor, "\r") == ["memory_write "]
    _type(editor, "chat he\t")  # past the first word Tab does nothing
    assert "".join(editor.chars) == "chat he"


def test_without_echo_or_names_tab_is_typed_as_it_is():
    editor, _ = _editor(echo=False)
    assert _type(editor, "chat a\tb\n") == ["chat a\tb"]


def test_emoji_are_one_sign_and_stray_bytes_show_as_replacement():
    editor, screen = _editor()
    assert _type(editor, "chat pizza \U0001f355 \U0001f1f5\U0001f1f9\n") == [
        "chat pizza \U0001f355 \U0001f1f5\U0001f1f9"]
    assert _type(editor, b"chat a\xffb\xed\xa0\x80c\n") == ["chat a\ufffdb\ufffd\ufffd\ufffdc"]
