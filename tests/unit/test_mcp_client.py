# The MCP client's pieces on both runtimes: tool names made valid for the API, results cut to a tool result
# (images left out with a note), long strings cut as an answer streams in, and the server list on flash with
# its token kept secret.
import json

from support import raises, read, remove_tree, tempdir

from mimi.mcp import client, client_answer, store
from mimi.mcp.client_tools import RemoteTool, api_name, definition, result_text
from mimi.tools.registry import RESULT_MAX, ToolError

VALID = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"


def _valid(name):
    return 0 < len(name) <= 64 and not [ch for ch in name if ch not in VALID]


def test_tool_names_are_prefixed_made_valid_and_cut_to_64_characters_stably():
    assert api_name("home", "HassTurnOn") == "mcp__home__HassTurnOn"
    odd = api_name("home", "light.turn on/\u00e9t\u00e9")
    assert odd == "mcp__home__light_turn_on__t_" and _valid(odd)
    long_one = api_name("kitchen_display", "x" * 80)
    other = api_name("kitchen_display", "x" * 79 + "y")
    assert len(long_one) == 64 and _valid(long_one) and long_one != other  # cut, and still two tools
    assert long_one == api_name("kitchen_display", "x" * 80)  # the same name at every fetch: tool_policy keeps it
    taken = {"mcp__home__a_b": 1}
    clash = api_name("home", "a.b", taken)
    assert clash != "mcp__home__a_b" and clash.startswith("mcp__home__a_b_") and _valid(clash)


def test_a_definition_is_encoded_once_with_a_description_and_an_object_schema():
    tool = {"name": "add", "description": "Add.\n" + "d" * 3000,
            "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}}}
    encoded = definition("mcp__local__add", tool, "local")
    data = json.loads(encoded)
    assert data["name"] == "mcp__local__add" and data["input_schema"] == tool["inputSchema"]
    assert len(data["description"]) == 1024 and data["description"].endswith("\u2026")
    bare = json.loads(definition("mcp__local__x", {"name": "x", "inputSchema": "nonsense"}, "local"))
    assert bare["description"] == "The x tool of the MCP server local" and bare["input_schema"] == {"type": "object"}
    held = RemoteTool(None, "local", "add", "mcp__local__add", encoded)
    assert held.tier == "operator" and held.level == "confirm" and held.acting  # until the owner says otherwise
    assert b"".join(held.chunks()) == encoded and len(held) == len(encoded) and held.is_json
    assert held.schema == tool["inputSchema"] and held.description.startswith("Add.")


def test_a_result_keeps_its_text_leaves_images_out_with_a_note_and_is_cut_to_the_tool_result_cap():
    result = {"content": [{"type": "text", "text": "It is 21 C."}, {"type": "image", "data": "iVBOR", "mimeType":
                                                                   "image/png"},
                          {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "note"}},
                          {"type": "resource_link", "uri": "https://x/y", "name": "y"}], "isError": False}
    text = result_text(result)
    assert text == ("It is 21 C.\n[an image (image/png) was left out: the board passes text only]\nnote\n"
                    "[link: y https://x/y]")
    long_text = result_text({"content": [{"type": "text", "text": "z" * 20000}]})
    assert len(long_text) == RESULT_MAX and long_text.endswith("[result cut at {} characters]".format(RESULT_MAX))
    assert result_text({"content": [], "structuredContent": {"result": 5}}) == '{"result": 5}'
    assert result_text({"content": []}) == "(no output)"
    failed = raises(ToolError, result_text, {"content": [{"type": "text", "text": "Unknown tool: nope"}],
                                             "isError": True})
    assert str(failed) == "Unknown tool: nope"  # the server's own words reach the model as an error


def test_strings_are_cut_as_they_stream_escapes_kept_whole_and_characters_never_split():
    cut = client_answer.Cut(keep=10)
    body = b'{"a": "' + b"x" * 30 + b'", "b": "ok", "c": "12345678\\u00e9tail", "d": "123456789\xc3\xa9z"}'
    out = b"".join(cut.feed(body[i:i + 3]) for i in range(0, len(body), 3))  # pieces of 3 bytes: state spans
    data = json.loads(out)
    assert data["a"] == "x" * 10 + "\u2026[cut]" and data["b"] == "ok"
    assert data["c"] == "12345678\u2026[cut]"  # \u00e9 did not fit whole: left out, not cut in half
    assert data["d"] == "123456789\u2026[cut]"  # the two-byte \u00e9 did not fit: no broken UTF-8
    assert client_answer.Cut().feed(b'{"q": "say \\"hi\\""}') == b'{"q": "say \\"hi\\""}'
    assert client.header_value("add") == "add"
    assert client.header_value("caf\u00e9") == "=?base64?Y2Fmw6k=?="  # as the 2026 spec's header codec


def test_the_server_list_survives_on_flash_its_token_masked_and_no_server_no_file():
    top = tempdir("mcp-store")
    try:
        servers = store.Store(top)
        server, replaced, dropped = servers.add("home", "http://192.168.1.10:8123/api/mcp",
                                                "eyJsecret-token-0123456789abcdef")
        assert not replaced and dropped == "" and server["remote"] is False
        servers.add("docs", "https://mcp.example.com/mcp", None, remote=True)
        again = store.Store(top)  # after a reboot
        assert [s["name"] for s in again.servers] == ["home", "docs"]
        assert [s["name"] for s in again.local()] == ["home"] and [s["name"] for s in again.remote()] == ["docs"]
        line = store.describe(again.get("home"), 3)
        assert "eyJsecret" not in line and "eyJs\u2026cdef" in line and line.endswith("3 tools")
        assert store.describe(again.get("docs")).endswith("token (not set)  Claude's MCP connector (Anthropic's "
                                                          "API calls it)")
        assert "eyJsecret-token" in read(top + "/mcp.json")  # kept where only the firmware reads it
        again.remove("home")
        again.remove("docs")
        assert store.Store(top).servers == [] and raises(OSError, read, top + "/mcp.json")
        assert "no MCP server named 'x'" in str(raises(store.StoreError, again.remove, "x"))
    finally:
        remove_tree(top)


def test_names_and_urls_are_checked_and_the_connector_takes_public_https_only():
    top = tempdir("mcp-check")
    try:
        servers = store.Store(top)
        for bad in ("", "a__b", "caf\u00e9", "x" * 17, "a b"):
            assert "a server name is 1 to 16" in str(raises(store.StoreError, servers.add, bad, "http://h/mcp"))
        assert "give the server's URL" in str(raises(store.StoreError, servers.add, "h", "ftp://h/mcp"))
        refused = raises(store.StoreError, servers.add, "h", "http://mcp.example.com/mcp", None, True)
        assert "needs an https:// URL" in str(refused)
        for lan in ("https://192.168.1.10/mcp", "https://homeassistant.local:8123/api/mcp", "https://localhost/x",
                    "https://172.20.0.2/mcp", "https://nas/mcp", "https://10.0.0.5/mcp"):
            assert "is not public" in str(raises(store.StoreError, servers.add, "h", lan, None, True)), lan
        assert store.is_public("https://172.32.0.1/mcp") and store.is_public("https://mcp.example.com:8443/x")
        assert servers.servers == []
    finally:
        remove_tree(top)


def test_a_servers_token_stays_with_its_host_and_with_whoever_calls_it():
    top = tempdir("mcp-token")
    token = "eyJsecret-token-0123456789abcdef"
    try:
        servers = store.Store(top)
        servers.add("home", "http://192.168.1.10:8123/api/mcp", token)
        server, replaced, dropped = servers.add("home", "http://192.168.1.10:8123/other")  # same host: kept
        assert replaced and dropped == "" and server["token"] == token
        server, replaced, dropped = servers.add("home", "http://192.168.1.11:8123/api/mcp")
        assert dropped == "the host changed" and "token" not in server
        assert "eyJsecret" not in read(top + "/mcp.json")
        servers.add("docs", "https://mcp.example.com/mcp", token)  # the board calls it with the token
        server, replaced, dropped = servers.add("docs", "https://mcp.example.com/mcp", None, remote=True)
        assert dropped == "another side calls it" and "token" not in server  # never handed to Anthropic's API
        for bad in ("http://[::1/mcp", "http://h:99999/mcp", "http://u:p@h/mcp"):
            assert "give the server's URL" in str(raises(store.StoreError, servers.add, "x", bad))
    finally:
        remove_tree(top)
