"""An MCP server over stdio whose tool list grows: calling `add_tool` adds a
tool `shout`, and the server sends `notifications/tools/list_changed` before
it answers the call.

It speaks the wire format (newline-delimited JSON-RPC, the 2025-06-18
handshake) itself: the Python SDK's `send_tool_list_changed` (mcp 2.3.0)
wedges the connection when called from inside a tool, so the call it was
sent from is never answered.
"""

import json
import sys

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


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text_result(request_id, text):
    send({"jsonrpc": "2.0", "id": request_id,
          "result": {"content": [{"type": "text", "text": text}], "isError": False}})


for line in sys.stdin:
    request = json.loads(line)
    method, request_id = request.get("method"), request.get("id")
    if request_id is None:
        continue  # notifications/initialized, cancellations
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "grow", "version": "1"},
        }})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}})
    elif method == "tools/call" and request["params"]["name"] == "add_tool":
        if SHOUT not in tools:
            tools.append(SHOUT)
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        text_result(request_id, "added shout")
    elif method == "tools/call" and request["params"]["name"] == "shout":
        text_result(request_id, request["params"]["arguments"]["text"].upper() + "!")
    else:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32601, "message": f"unknown method {method}"}})
