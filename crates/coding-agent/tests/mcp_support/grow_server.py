"""An MCP server over stdio whose tool list grows: calling `add_tool` adds a
tool `shout`, and the server sends `notifications/tools/list_changed` before
it answers the call.

It speaks the wire format itself (`stdio_server.py`): the Python SDK's
`send_tool_list_changed` (mcp 2.3.0) wedges the connection when called from
inside a tool, so the call it was sent from is never answered.
"""

from stdio_server import send, serve

ADD_TOOL = {
    "name": "add_tool",
    "description": "Adds the tool shout.",
    "inputSchema": {"type": "object", "properties": {}},
}
SHOUT = {
    "name": "shout",
    "description": "Returns the text in capitals.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}
tools = [ADD_TOOL]


def call(tool, arguments):
    if tool == "add_tool":
        if SHOUT not in tools:
            tools.append(SHOUT)
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        text = "added shout"
    else:
        text = arguments["text"].upper() + "!"
    return [{"type": "text", "text": text}]


serve("grow", lambda: tools, call, list_changed=True)
