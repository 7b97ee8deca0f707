"""An MCP server over stdio whose tool `big` answers with `size` bytes of
text: one message that long on the wire, its "id" last (the TypeScript
SDK's order, the harder one to read back).
"""

from stdio_server import serve

BIG = {
    "name": "big",
    "description": "Answers with `size` bytes of text.",
    "inputSchema": {
        "type": "object",
        "properties": {"size": {"type": "integer"}},
        "required": ["size"],
    },
}


def call(_tool, arguments):
    return [{"type": "text", "text": "x" * arguments["size"]}]


serve("big", lambda: [BIG], call, id_last=True)
