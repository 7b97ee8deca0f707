"""An MCP server over stdio on the Python SDK (`mcp` 2.x, `MCPServer`), with
the shapes its users get without asking: a nested model is put in `$defs`
behind a `$ref` (and an optional one in `anyOf` with null), and a list
result is sent as one text block per item beside `{"result": [...]}`.
"""

from typing import Optional

from pydantic import BaseModel

from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk", log_level="WARNING")


class Point(BaseModel):
    x: int
    y: int


@server.tool()
def moved(point: Point, by: Optional[Point] = None) -> str:
    """Returns the point moved by `by`."""
    by = by or Point(x=0, y=0)
    return f"{point.x + by.x},{point.y + by.y}"


@server.tool()
def letters() -> list[str]:
    """Returns a list of two letters."""
    return ["a", "b"]


server.run()
