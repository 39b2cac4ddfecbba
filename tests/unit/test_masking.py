# safety/masking.py: every configured secret and any credential after Authorization, Bearer or an API-key name is
# masked in text from outside (a provider's error, a tool's result) before anyone sees it; masked, then cut.
import json

from support import remove_tree, run, tempdir

from mimi.settings import Config
from mimi.llm.errors import from_response, from_stream_error
from mimi.llm.stream import StreamError
from mimi.safety import masking
from mimi.safety.audit import Audit
from mimi.tools.registry import Registry, ToolError
from mimi.tools.turn import Turn

KEY = "sk-proj-unit" + "x" * 30 + "KEYTAIL9"
TOKEN = "eyJmcp-server-token-0123456789abcdefTOKENEND"


def test_a_configured_secret_is_masked_wherever_it_stands():
    said = masking.outside("Invalid request: Authorization: Bearer {} (key {}).".format(KEY, KEY), [KEY])
    assert KEY not in said and "KEYTAIL9" not in said
    assert said == "Invalid request: Authorization: Bearer sk-p\u2026AIL9 (key sk-p\u2026AIL9)."
    assert masking.outside("ab12", ["ab12"]) == "****"  # a short secret, when it is the whole text
    assert masking.outside("cab12s", ["ab12"]) == "cab12s"  # ... and never inside a word


def test_a_credential_nobody_configured_is_masked_after_its_name():
    other = "sk-other-" + "q" * 24 + "OTHERTAIL"
    for text in ("Authorization: Bearer " + other, "authorization=" + other, '"x-api-key": "' + other + '"',
                 "GET /v1/models?api_key=" + other + "&x=1", "BEARER " + other, "Authorization: Basic " + other):
        said = masking.outside(text, [])
        assert "OTHERTAIL" not in said and "q" * 24 not in said and "sk-o\u2026TAIL" in said, said
    assert masking.outside("token is Bearer abc12345", []) == "token is Bearer ****"
    for prose in ("Authorization header is missing", "expected Bearer token", "the x-api-key header is required",
                  "Authorization: Bearer", "an authorization_token field"):
        assert masking.outside(prose, []) == prose  # words, not keys, are left as they are


def test_masked_first_then_cut_never_half_a_secret():
    for at in range(0, 60, 7):  # the secret across the cut at every offset
        text = "e" * (100 - at) + " " + KEY + " more words"
        said = masking.outside(text, [KEY], 100)
        assert len(said) <= 100 and "x" * 5 not in said and "KEYTAIL9" not in said, (at, said)
        said = masking.outside("e" * (100 - at) + " Bearer " + "y" * 40 + "TAIL", [], 100)
        assert "y" * 5 not in said and len(said) <= 100, (at, said)
    long_text = "w" * 20000 + KEY  # far past the cut: never read
    assert masking.outside(long_text, [KEY], 50) == "w" * 50


def test_the_secrets_are_every_secret_setting_set_and_the_mcp_tokens():
    config = Config()
    config.override("llm_profiles", "k2", KEY)
    found = masking.secrets(config, [TOKEN, None, ""])
    assert KEY in found and TOKEN in found and None not in found and "" not in found
    assert found == sorted(found, key=len, reverse=True)  # a secret inside a longer one is masked with the longer


def test_a_provider_error_quoting_its_key_reaches_nobody_whole():
    body = '{"error": {"message": "Invalid request: Authorization: Bearer ' + KEY + ' is malformed", "type": "x"}}'
    err = from_response(400, {}, body, "m", "eb", [KEY])
    assert KEY not in err.message and "KEYTAIL9" not in err.message
    assert err.message == "Model profile eb rejected the request (400): Invalid request: Authorization: Bearer " \
        "sk-p\u2026AIL9 is malformed"
    err = from_response(403, {}, body, "m", None, [KEY])
    assert "KEYTAIL9" not in err.message and "(403)" in err.message
    long_body = '{"error": {"message": "' + "z" * 190 + " x-api-key: " + KEY + '", "type": "x"}}'
    assert "x" * 8 not in from_response(400, {}, long_body, "m", None, [KEY]).message  # cut after masking
    err = from_stream_error(StreamError("api_error", "upstream said: Bearer " + KEY), "eb", [KEY])
    assert "KEYTAIL9" not in err.message and "sk-p\u2026AIL9" in err.message


class _Quoting:
    name = "quoting"
    description = "Answers with what a web page or a server said."
    schema = {"type": "object", "properties": {"fail": {"type": "boolean"}}}

    def run(self, data):
        if data.get("fail"):
            raise ToolError("the server answered 401: token " + TOKEN + " is not valid")
        return "page text: api_key=" + KEY + " and more"


class _App:
    pass


def test_a_tool_s_result_and_error_are_masked_before_the_model_the_chat_and_the_audit_log_get_them():
    top = tempdir("masking")
    try:
        app = _App()
        app.config = Config()
        app.config.override("llm_config", "api_key", KEY)
        app.mcp_client = _App()
        app.mcp_client.store = _App()
        app.mcp_client.store.servers = [{"name": "home", "url": "http://h/mcp", "token": TOKEN}]
        registry = Registry(app)
        audit = Audit(top, lambda: masking.of_app(app))
        registry.guards.append(audit)
        registry.add(_Quoting())
        turn = Turn("cli", "console", None, "owner")
        text, is_error = run(registry.execute("quoting", {}, turn))
        assert not is_error and KEY not in text and "api_key=sk-p\u2026AIL9 and more" in text
        text, is_error = run(registry.execute("quoting", {"fail": True}, turn))
        assert is_error and TOKEN not in text and "token eyJm\u2026NEND is not valid" in text
        logged = "".join(open(top + "/audit/" + name).read() for name in audit.day_files())
        assert KEY not in logged and TOKEN not in logged
        results = [json.loads(line)["result"] for line in logged.splitlines()]
        assert "api_key=sk-p\u2026AIL9" in results[0] and "token eyJm\u2026NEND" in results[1]
    finally:
        remove_tree(top)


def test_an_mcp_servers_error_quoting_its_token_is_masked_on_the_console_and_for_the_model():
    from stub_app import Holder, stub_app
    from test_mcp_client_protocol import Stub, _json

    from mimi import platform
    from mimi.mcp.client import MODERN
    from mimi.tools import turn

    app = stub_app("mcp-quoting", parts=True)
    app.registry = Registry(app)
    app.models = Holder()
    app.models.mcp_servers = None
    add = {"name": "add", "description": "Add.", "inputSchema": {"type": "object"}}
    refusing = [True]

    def answer(message, headers):  # a server that quotes the Authorization header it was sent
        if message["method"] == "server/discover":
            return _json(message, {"supportedVersions": [MODERN]})
        if message["method"] == "tools/list" and not refusing[0]:
            return _json(message, {"tools": [add], "ttlMs": 60000})
        said = "Authorization: {} is not valid here".format(headers["authorization"])
        return _json(message, error={"code": -32001, "message": said})

    async def scenario(url):
        from mimi.mcp import client_commands

        lines, saved = [], platform.console_write
        platform.console_write = lines.append  # what mcp_add prints (as test_mcp_client_service's Said)
        try:
            await client_commands.add(app, "home", url, TOKEN)
            refusing[0] = False
            await app.mcp_client.servers["home"].fetch()
            refusing[0] = True
            called = await app.registry.execute("mcp__home__add", {}, turn.console())
        finally:
            platform.console_write = saved
        return "".join(lines), called

    try:
        said, (text, is_error) = Stub(answer).run(scenario)
        assert "did not answer: Authorization: Bearer eyJm\u2026NEND is not valid here (error -32001)" in said, said
        assert is_error and "refused the call: Authorization: Bearer eyJm\u2026NEND is not valid here" in text, text
        assert TOKEN not in said and TOKEN not in text and "TOKENEND" not in said + text
    finally:
        remove_tree(app.top)
