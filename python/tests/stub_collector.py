"""A stand-in collector on 127.0.0.1 that records every batch it is sent (for client tests)."""

import http.server
import json
import threading


class StubCollector:
    def __init__(self, token="t" * 43, status=200):
        self.token = token
        self.status = status
        self.batches = []  # (path, [line, ...])
        self.lock = threading.Lock()
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                if self.headers.get("Authorization") != "Bearer " + stub.token:
                    self.send_response(401)
                    self.end_headers()
                    return
                with stub.lock:
                    stub.batches.append((self.path, [l for l in body.split("\n") if l]))
                self.send_response(stub.status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps({"accepted": 1}).encode())

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def lines(self, stream):
        with self.lock:
            return [l for p, ls in self.batches if p == "/v1/streams/" + stream for l in ls]

    def close(self):
        self.server.shutdown()
        self.server.server_close()
