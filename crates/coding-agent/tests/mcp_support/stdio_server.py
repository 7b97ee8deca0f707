"""The stdio side of an MCP server, for the servers the tests write
(`grow_server.py`, `image_server.py`): newline-delimited JSON-RPC and the
2025-06-18 handshake, spoken directly, so what a tool answers reaches the
client exactly as written.
"""

import json
import sys


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def serve(name, tools, call, list_changed=False, id_last=False):
    """Answers requests until stdin closes: `tools()` is the tool list,
    `call(tool, arguments)` a call's content blocks, or anything else as the
    whole result (it may `send` notifications first; they reach the client
    before the answer). `id_last` writes an answer's "id" after its
    "result", as the TypeScript SDK does."""
    for line in sys.stdin:
        request = json.loads(line)
        method, request_id = request.get("method"), request.get("id")
        if request_id is None:
            continue  # notifications/initialized, cancellations
        if method == "initialize":
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {"listChanged": list_changed}},
                "serverInfo": {"name": name, "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": tools()}
        elif method == "tools/call":
            params = request["params"]
            result = call(params["name"], params.get("arguments", {}))
            if isinstance(result, list):
                result = {"content": result, "isError": False}
        else:
            send({"jsonrpc": "2.0", "id": request_id,
                  "error": {"code": -32601, "message": f"unknown method {method}"}})
            continue
        if id_last:
            send({"result": result, "jsonrpc": "2.0", "id": request_id})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
