"""An MCP server over stdio whose tools answer with lines the client cannot
read as they are: `latin1` with bytes that are not UTF-8, `no_message` with
a JSON-RPC error that has no "message"; `noisy` prints a log line to stdout
before its answer, and `echo` answers as it should.
"""

import json
import sys

from stdio_server import send

TOOLS = [
    {"name": name, "inputSchema": {"type": "object"}}
    for name in ["latin1", "no_message", "noisy", "echo"]
]


def raw(data):
    sys.stdout.buffer.write(data + b"\n")
    sys.stdout.flush()


for line in sys.stdin:
    request = json.loads(line)
    method, request_id = request.get("method"), request.get("id")
    if request_id is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "unreadable", "version": "1"},
        }})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        tool = request["params"]["name"]
        if tool == "latin1":
            raw(b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"caf\xe9"}]}}'
                % request_id)
        elif tool == "no_message":
            raw(b'{"jsonrpc":"2.0","id":%d,"error":{"code":-32000}}' % request_id)
        else:
            if tool == "noisy":
                raw(b'{"level":"info","id":%d,"msg":"working"}' % request_id)
                raw(b"debug: still working")
            send({"jsonrpc": "2.0", "id": request_id,
                  "result": {"content": [{"type": "text", "text": tool}]}})
