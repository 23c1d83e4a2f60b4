"""A local HTTP server that records every request (no gateway needed).

Recorder().start() listens on 127.0.0.1:<free port>; .url is its base URL.
Each request is kept as a Req (method, path, query, headers with lower-case
names, raw body, body decoded from gzip when Content-Encoding says so).
.status sets the answer's status (default 200); GETs answer .get_body.
.wait_for(n, timeout) blocks until n requests arrived.
"""

import gzip
import http.server
import threading
import urllib.parse


class Req:
    def __init__(self, method, raw_path, headers, raw):
        self.method = method
        self.raw_path = raw_path
        u = urllib.parse.urlsplit(raw_path)
        self.path = u.path
        self.query = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        self.headers = headers
        self.raw = raw
        if headers.get("content-encoding") == "gzip":
            self.body = gzip.decompress(raw)
        else:
            self.body = raw

    def lines(self):
        return self.body.decode("utf-8").splitlines()


class Recorder:
    def __init__(self):
        self.requests = []
        self.status = 200
        self.get_body = b"0123456789abcdef"
        self._cv = threading.Condition()
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _handle(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                hdrs = {k.lower(): v for k, v in self.headers.items()}
                with rec._cv:
                    rec.requests.append(Req(self.command, self.path, hdrs, raw))
                    status = rec.status
                    rec._cv.notify_all()
                body = rec.get_body if self.command == "GET" and status == 200 else b""
                if status != 200 and self.command != "HEAD":
                    body = b"<Error><Code>NoSuchKey</Code></Error>"
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("ETag", '"0123"')
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _handle

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, n, timeout=10):
        with self._cv:
            return self._cv.wait_for(lambda: len(self.requests) >= n, timeout)

    def of(self, method):
        with self._cv:
            return [r for r in self.requests if r.method == method]
