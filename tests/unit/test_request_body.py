# The request body is written in pieces, yet is exactly the JSON a json.dumps of the whole would give.
import json

from mimi.llm.claude import JsonBody


def test_pieces_join_to_the_json_of_the_whole_request():
    system = [{"type": "text", "text": "soul " * 900}, {"type": "text", "text": "caf\u00e9 \"q\" \n\u2603 " * 300,
                                                        "cache_control": {"type": "ephemeral"}}]
    tools = [{"name": "t", "description": "d", "input_schema": {"type": "object", "properties": {}}}]
    messages = [{"role": "user", "content": "hi \U0001F600"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "t", "input": {"a": [1, 2.5, None, True], 'we"ird\n': {}}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "ok", "is_error": False}]}]
    pieces = list(JsonBody(system, messages, tools, "claude-x", 1000, "none").pieces())
    body = json.loads(b"".join(pieces))
    assert body == {"model": "claude-x", "max_tokens": 1000, "stream": True, "system": system, "tools": tools,
                    "tool_choice": {"type": "none"}, "messages": messages}
    assert max(len(p) for p in pieces) <= 1024 * 6 + 2  # no piece holds a whole long text
