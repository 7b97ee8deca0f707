"""An MCP server over stdio with the odd tools servers in the wild have:
input schemas without `"type"` (which providers refuse), not an object, or
that do not compile; a `$schema` the validator does not know; an object
that may be null; one without `inputSchema` at all, and one whose name is
no string (the listing breaks the protocol's schema); and `bare`, whose
answer is a bare number, not a tool result.
"""

from stdio_server import serve

TEXT = {"text": {"type": "string"}}
TOOLS = [
    {"name": "sound", "inputSchema": {"type": "object", "properties": TEXT}},
    {"name": "untyped", "inputSchema": {"properties": TEXT, "required": ["text"]}},
    {"name": "dialect", "inputSchema": {
        "$schema": "https://json-schema.org/draft-07/schema#", "type": "object", "properties": TEXT}},
    {"name": "nullable", "inputSchema": {"type": ["object", "null"], "properties": TEXT}},
    {"name": "listed", "inputSchema": {"type": "array", "items": {"type": "string"}}},
    {"name": "broken", "inputSchema": {"type": "object", "properties": {"text": {"type": "text"}}}},
    {"name": "bare", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "schemaless", "description": "Takes nothing."},
    {"name": 7, "inputSchema": {"type": "object"}},
]


def call(tool, arguments):
    if tool == "bare":
        return 42
    return [{"type": "text", "text": arguments.get("text", "")}]


serve("schemas", lambda: TOOLS, call)
