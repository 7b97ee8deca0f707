"""An MCP server over stdio with one tool, `show`, that answers with the
image it is given (`data` in base64, `mimeType`): what a screenshot or chart
server sends, at whatever size the test chooses.
"""

from stdio_server import serve

SHOW = {
    "name": "show",
    "description": "Answers with the image given.",
    "inputSchema": {
        "type": "object",
        "properties": {"data": {"type": "string"}, "mimeType": {"type": "string"}},
        "required": ["data", "mimeType"],
    },
}


def call(_tool, arguments):
    return [dict(arguments, type="image")]


serve("image", lambda: [SHOW], call)
