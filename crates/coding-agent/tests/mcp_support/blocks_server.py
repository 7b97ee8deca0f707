"""An MCP server over stdio with one tool, `blocks`, that answers with the
content blocks it is given, as written: kinds newer than the client's
protocol included.
"""

from stdio_server import serve

BLOCKS = {
    "name": "blocks",
    "description": "Answers with the content blocks given.",
    "inputSchema": {
        "type": "object",
        "properties": {"blocks": {"type": "array"}},
        "required": ["blocks"],
    },
}


def call(_tool, arguments):
    return arguments["blocks"]


serve("blocks", lambda: [BLOCKS], call)
