"""A streamable HTTP MCP server on the Python SDK (`mcp` 2.x, `MCPServer`),
listening on 127.0.0.1 at the port in `PORT`. Its tool `headers` answers
with the request headers a client configures (`Authorization`, `X-Team`),
so a test can see that they arrive.
"""

import os

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("headers", log_level="WARNING")


@server.tool()
def headers(ctx: Context) -> str:
    """Returns the Authorization and X-Team headers of the request."""
    request = ctx.request_context.request
    return ", ".join(
        f"{name}={request.headers.get(name, '(none)')}" for name in ("authorization", "x-team")
    )


server.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]))
