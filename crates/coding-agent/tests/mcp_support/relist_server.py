"""An MCP server over stdio whose tool `relist` says its tools changed
(`notifications/tools/list_changed`, sent before the call's answer), and
whose listings misbehave as `MODE` says:

- `loop`: every page asked for with a cursor is empty and names the cursor
  `same` again, so a client following cursors never ends;
- `slow`: every listing after the first is answered after a minute.
"""

import json
import os
import sys
import threading
import time

MODE = os.environ.get("MODE", "")
RELIST = {"name": "relist", "description": "Changes the tool list.",
          "inputSchema": {"type": "object", "properties": {}}}
listings = 0


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer_listing(request_id, cursor):
    if MODE == "loop":
        tools = [] if cursor else [RELIST]
        send({"jsonrpc": "2.0", "id": request_id,
              "result": {"tools": tools, "nextCursor": "same"}})
        return
    if MODE == "slow" and listings > 1:
        time.sleep(60)
    send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": [RELIST]}})


for line in sys.stdin:
    request = json.loads(line)
    method, request_id = request.get("method"), request.get("id")
    if request_id is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "relist", "version": "1"}}})
    elif method == "tools/list":
        listings += 1
        cursor = (request.get("params") or {}).get("cursor")
        # Answered beside the calls, as a server doing real work would.
        threading.Thread(target=answer_listing, args=(request_id, cursor),
                         daemon=True).start()
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "content": [{"type": "text", "text": "relisted"}]}})
    else:
        send({"jsonrpc": "2.0", "id": request_id, "result": {}})
