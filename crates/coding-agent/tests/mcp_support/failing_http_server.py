"""A streamable HTTP MCP server, written out by hand, on 127.0.0.1 at the
port in `PORT`, whose tools fail the way servers behind proxies and gateways
do: `overloaded` is answered HTTP 500 with a text body, `portal` with an
HTML page; `unreadable` with an event whose JSON-RPC error has no
"message"; `echo` answers. Every other message gets the protocol's answer,
so the session itself stays sound.
"""

import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}
SESSION = [("mcp-session-id", "one")]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", content_type="application/json", headers=()):
        self.send_response(status)
        self.send_header("content-type", content_type)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.reply(405)

    def do_DELETE(self):
        self.reply(200)

    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if "id" not in message:
            return self.reply(202)
        method = message["method"]
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "failing", "version": "1"},
            }
        elif method == "tools/list":
            names = ["echo", "overloaded", "portal", "unreadable"]
            result = {"tools": [{"name": name, "inputSchema": SCHEMA} for name in names]}
        elif method == "tools/call":
            name = message["params"]["name"]
            if name == "overloaded":
                return self.reply(500, b"upstream timed out", "text/plain")
            if name == "portal":
                return self.reply(200, b"<html>Sign in to the office network</html>", "text/html")
            if name == "unreadable":
                event = b'data: {"jsonrpc":"2.0","id":%d,"error":{"code":-32000}}\n\n' % message["id"]
                return self.reply(200, event, "text/event-stream", SESSION)
            text = message["params"]["arguments"]["text"]
            result = {"content": [{"type": "text", "text": text}]}
        else:
            error = {"code": -32601, "message": f"no method {method}"}
            answer = {"jsonrpc": "2.0", "id": message["id"], "error": error}
            return self.reply(200, json.dumps(answer).encode(), headers=SESSION)
        answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        self.reply(200, json.dumps(answer).encode(), headers=SESSION)


ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
