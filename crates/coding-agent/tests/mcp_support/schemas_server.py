"""An MCP server over stdio with the odd tools servers in the wild have:
input schemas without `"type"` (which providers refuse), not an object, or
that do not compile; and `bare`, whose answer is a bare number, not a tool
result.
"""

from stdio_server import serve

TEXT = {"text": {"type": "string"}}
TOOLS = [
    {"name": "sound", "inputSchema": {"type": "object", "properties": TEXT}},
    {"name": "untyped", "inputSchema": {"properties": TEXT, "required": ["text"]}},
    {"name": "listed", "inputSchema": {"type": "array", "items": {"type": "string"}}},
    {"name": "broken", "inputSchema": {"type": "object", "properties": {"text": {"type": "text"}}}},
    {"name": "bare", "inputSchema": {"type": "object", "properties": {}}},
]


def call(tool, arguments):
    if tool == "bare":
        return 42
    return [{"type": "text", "text": arguments.get("text", "")}]


serve("schemas", lambda: TOOLS, call)
