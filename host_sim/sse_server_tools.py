# Claude's server tools as the real stream sends them: web_search and web_fetch blocks, citations; the MCP
# connector's mcp_tool_use and mcp_tool_result blocks; the tool search tool's search and its tool references.
import base64
import secrets

from host_sim.sse_replies import DEFAULT_CHUNK, Reply, _text_block, new_id


def _encrypted(n):
    """Opaque base64 like the real encrypted_content / encrypted_index fields."""
    return base64.b64encode(secrets.token_bytes(n)).decode()


def web_result(title, url, page_age="3 days ago", size=900):
    """One web_search_result as the real API sends it (its content encrypted)."""
    return {"type": "web_search_result", "title": title, "url": url, "encrypted_content": _encrypted(size),
            "page_age": page_age}


def web_search(query, results, answer=(), intro=None, pause=False, tool="web_search",
               chunk=DEFAULT_CHUNK, delay=0.0, search_seconds=1.5):
    """One of Claude's server web searches, streamed as the real API does: an optional intro text, a
    server_tool_use block (its input as input_json_delta), the web_search_tool_result (whole, in
    content_block_start), then the answer's text blocks. `results` is a list of (title, url) or an error
    code string ("max_uses_exceeded", "unavailable"...); each answer part is a str, or (text, url) for a
    passage citing that result (citations_delta before its text). `pause` ends with pause_turn (the
    answer then usually empty). `tool` "web_fetch" gives a web_fetch_tool_result for the first url."""
    blocks = [_text_block(intro)] if intro else []
    call_id = new_id("srvtoolu")
    if tool == "web_fetch":
        url = results[0][1] if isinstance(results, list) else query
        blocks.append({"type": "server_tool_use", "id": call_id, "name": "web_fetch", "input": {"url": url}})
        if isinstance(results, str):
            content = {"type": "web_fetch_tool_error", "error_code": results}
        else:
            content = {"type": "web_fetch_result", "url": url, "retrieved_at": "2026-11-24T00:00:00Z",
                       "content": {"type": "document", "title": results[0][0], "citations": {"enabled": True},
                                   "source": {"type": "text", "media_type": "text/plain", "data": results[0][0]}}}
        blocks.append({"type": "web_fetch_tool_result", "tool_use_id": call_id, "content": content})
    else:
        blocks.append({"type": "server_tool_use", "id": call_id, "name": "web_search", "input": {"query": query}})
        if isinstance(results, str):
            content = {"type": "web_search_tool_result_error", "error_code": results}
        else:
            content = [web_result(title, url) for title, url in results]
        blocks.append({"type": "web_search_tool_result", "tool_use_id": call_id, "content": content})
    titles = {} if isinstance(results, str) else {url: title for title, url in results}
    for part in answer:
        if isinstance(part, str):
            blocks.append(_text_block(part))
            continue
        said, url = part
        citation = {"type": "web_search_result_location", "url": url, "title": titles.get(url, url),
                    "encrypted_index": _encrypted(48), "cited_text": said[:150]}
        blocks.append({"type": "text", "text": said, "citations": [citation]})
    reply = Reply(blocks, "pause_turn" if pause else "end_turn", chunk, delay)
    reply.search_seconds = search_seconds
    return reply


def mcp_tool(server, name, input, result, answer="", intro=None, is_error=False, chunk=DEFAULT_CHUNK, delay=0.0,
             call_seconds=0.5):
    """Claude used a tool of a remote MCP server (the connector: Anthropic's API called it), streamed as the real
    API does: an optional intro text, the mcp_tool_use block (its input as input_json_delta), the
    mcp_tool_result (whole, in content_block_start; `result` is its text), then the answer's text."""
    blocks = [_text_block(intro)] if intro else []
    call_id = new_id("mcptoolu")
    blocks.append({"type": "mcp_tool_use", "id": call_id, "name": name, "server_name": server, "input": input})
    blocks.append({"type": "mcp_tool_result", "tool_use_id": call_id, "is_error": is_error,
                   "content": [{"type": "text", "text": result}]})
    if answer:
        blocks.append(_text_block(answer))
    reply = Reply(blocks, "end_turn", chunk, delay)
    reply.search_seconds = call_seconds  # the wait after the call block: Anthropic calls the server
    return reply


def tool_search(query, found, calls=(), intro=None, tool="tool_search_tool_bm25", chunk=DEFAULT_CHUNK, delay=0.0):
    """Claude searched the deferred tools (the tool search tool, run by Anthropic): an optional intro, the
    server_tool_use block, the tool_search_tool_result naming the tools `found` (tool_reference entries), then a
    tool_use block per (name, input) of `calls` (stop_reason tool_use), or the end of the turn without calls."""
    blocks = [_text_block(intro)] if intro else []
    call_id = new_id("srvtoolu")
    blocks.append({"type": "server_tool_use", "id": call_id, "name": tool, "input": {"query": query}})
    blocks.append({"type": "tool_search_tool_result", "tool_use_id": call_id, "content": {
        "type": "tool_search_tool_search_result",
        "tool_references": [{"type": "tool_reference", "tool_name": name} for name in found]}})
    for name, args in calls:
        blocks.append({"type": "tool_use", "id": new_id("toolu"), "name": name, "input": args})
    return Reply(blocks, "tool_use" if calls else "end_turn", chunk, delay)
