"""A real MCP client (the Python SDK's stdio client) driving a server.

usage: client.py COMMAND [ARG...] < calls.json

calls.json is a list of {"name", "arguments", "timeout"?}. Prints one JSON
object: {"tools": [{name, description, inputSchema}], "results": [...]}, each
result {"isError", "content"} or {"exception": text} when the call raised (a
timeout: the SDK then sends notifications/cancelled). Progress messages of
each call are listed in its "progress".
"""

import json
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def main() -> None:
    calls = json.load(sys.stdin)
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    out = {"tools": [], "results": []}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            out["tools"] = [
                {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                for t in listed.tools
            ]
            for call in calls:
                progress = []

                async def on_progress(value, total, message, progress=progress):
                    progress.append(message)

                try:
                    result = await session.call_tool(
                        call["name"],
                        call.get("arguments", {}),
                        read_timeout_seconds=call.get("timeout"),
                        progress_callback=on_progress,
                    )
                    content = [c.model_dump(by_alias=True, exclude_none=True) for c in result.content]
                    out["results"].append(
                        {"isError": bool(result.is_error), "content": content, "progress": progress}
                    )
                except Exception as error:  # the SDK raises on timeouts
                    out["results"].append({"exception": str(error), "progress": progress})
    print(json.dumps(out))


anyio.run(main)
