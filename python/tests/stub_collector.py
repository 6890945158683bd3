"""A stand-in collector on 127.0.0.1 that records every batch it is sent (for client tests)."""

import http.server
import json
import threading


class StubCollector:
    def __init__(self, token="t" * 43, status=200):
        self.token = token
        self.status = status
        self.batches = []  # (path, [line, ...])
        self.batch_ids = []  # the X-Rlsight-Batch header of each batch
        self.answers = []  # (status, document) answered first, one per batch, before the default
        self.lock = threading.Lock()
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                if self.headers.get("Authorization") != "Bearer " + stub.token:
                    self.send_response(401)
                    self.end_headers()
                    return
                lines = [l for l in body.split("\n") if l]
                with stub.lock:
                    stub.batches.append((self.path, lines))
                    stub.batch_ids.append(self.headers.get("X-Rlsight-Batch"))
                    status, doc = stub.answers.pop(0) if stub.answers else (stub.status, {"accepted": len(lines), "rejected": 0})
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps(doc).encode())

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
