"""An MCP server over stdio whose tools have the input schemas servers in
the wild declare: a sound one, one without `"type"` (which providers
refuse), one that is not an object, and one that does not compile.
"""

from stdio_server import serve

TEXT = {"text": {"type": "string"}}
TOOLS = [
    {"name": "sound", "inputSchema": {"type": "object", "properties": TEXT}},
    {"name": "untyped", "inputSchema": {"properties": TEXT, "required": ["text"]}},
    {"name": "listed", "inputSchema": {"type": "array", "items": {"type": "string"}}},
    {"name": "broken", "inputSchema": {"type": "object", "properties": {"text": {"type": "text"}}}},
]


def call(_tool, arguments):
    return [{"type": "text", "text": arguments.get("text", "")}]


serve("schemas", lambda: TOOLS, call)
