"""A real HTTP/1.1 Agent Stub for the `dify-agent` end-to-end tests. Stdlib only.

The control plane lives under /agent-stub and needs `Authorization: Bearer <jwe>`. Signed URLs
(the data plane) point at the same server under /data/... and carry `sig=<secret>` instead of a
bearer token, so a test can check that the secret never leaks into an error message.

Every request is recorded (`stub.requests`); bodies up to KEEP_LIMIT are kept whole, bigger ones
only as size + sha256, so a 200 MB upload costs no memory here. Request bodies are decoded by
hand (chunked or Content-Length) because the CLI streams its uploads.

To try `dify-agent` by hand (docs/dify-agent.md "Try it"), run this file:
`python3 tests/support/agent_stub.py [--port 8080] [--jwe try-me]` serves on loopback until
Ctrl-C, printing the two variables the CLI needs.

Fault injection: `stub.faults[route] = Fault(...)`, where route is "METHOD /path" for the
control plane (path below /agent-stub, without the query) and "upload" / "download" for the data
plane. A fault replaces the normal answer for every request on that route until removed.
"""
import base64
import email.message
import hashlib
import http.server
import json
import socket
import threading
import time
import urllib.parse
import uuid

PREFIX = "/agent-stub"
KEEP_LIMIT = 4 * 1024 * 1024   # bodies and multipart parts above this are kept as size + sha256
READ_SIZE = 64 * 1024


def canonical_reference(record_id):
    """`dify-file-ref:` + padded URL-safe base64 of {"record_id": ...}, as the real stub makes."""
    payload = json.dumps({"record_id": record_id}, separators=(",", ":")).encode()
    return "dify-file-ref:" + base64.urlsafe_b64encode(payload).decode()


class Fault:
    """How one route misbehaves. Build with the helpers below."""

    def __init__(self, kind, status=200, body=b"", headers=None, pieces=1, pause=0.0,
                 location=None):
        self.kind = kind            # status | slow | hang | close | redirect | slow_read | streamed
        self.status = status
        self.body = body.encode() if isinstance(body, str) else body
        self.headers = dict(headers or {})
        self.pieces = pieces
        self.pause = pause
        self.location = location


def status(code, body=b"", content_type="application/json"):
    """A fixed answer, e.g. status(401, '{"detail":{"code":"...","message":"x"}}')."""
    return Fault("status", code, body, {"Content-Type": content_type})


def oversized(size, code=200):
    """A body of `size` bytes (for the 1 MiB upload-response and 64 KiB knowledge caps)."""
    return Fault("status", code, b"x" * size, {"Content-Type": "application/json"})


def slow(body, pieces=10, pause=0.5, code=200):
    """Headers at once (with the full Content-Length), then the body in pieces with pauses."""
    return Fault("slow", code, body, {"Content-Type": "application/octet-stream"}, pieces, pause)


def hang():
    """Read nothing, answer nothing: the connection stays open until the stub stops."""
    return Fault("hang")


def streamed(size, code=200):
    """A `size`-byte JSON-looking body written 1 MiB at a time, never held whole (a
    control-plane answer far larger than any client should keep)."""
    f = Fault("streamed", code, b"", {"Content-Type": "application/json"})
    f.size = size
    return f


def close():
    """Drop the connection without an answer (a transport failure for the client)."""
    return Fault("close")


def redirect(location, code=307):
    return Fault("redirect", code, b"", {}, location=location)


def slow_read(pause=0.2, code=200, body=b"{}"):
    """Read the request body 64 KiB at a time with a pause between reads, then answer."""
    return Fault("slow_read", code, body, {"Content-Type": "application/json"}, pause=pause)


class Recorded:
    """One request as the stub saw it."""

    def __init__(self, method, target, headers):
        parsed = urllib.parse.urlsplit(target)
        self.method = method
        self.target = target
        self.path = parsed.path
        self.raw_query = parsed.query
        self.query = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.body = b""           # None when larger than KEEP_LIMIT
        self.size = 0
        self.sha256 = hashlib.sha256(b"").hexdigest()
        self.complete = False     # the whole body arrived
        self.response_status = None
        self.response_body = None

    @property
    def chunked(self):
        return "chunked" in self.headers.get("transfer-encoding", "").lower()

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"<{self.method} {self.target} {self.size}B>"


class Part:
    def __init__(self, headers):
        self.headers = headers
        disposition = email.message.Message()
        disposition["content-disposition"] = headers.get("content-disposition", "")
        self.name = disposition.get_param("name", header="content-disposition")
        self.filename = disposition.get_param("filename", header="content-disposition")
        self.content_type = headers.get("content-type")
        self._hash = hashlib.sha256()
        self._content = bytearray()
        self.size = 0
        self.content = None       # bytes once finished (None when larger than KEEP_LIMIT)
        self.sha256 = None

    def add(self, data):
        self._hash.update(data)
        self.size += len(data)
        if self._content is not None:
            self._content += data
            if len(self._content) > KEEP_LIMIT:
                self._content = None

    def finish(self):
        self.sha256 = self._hash.hexdigest()
        self.content = bytes(self._content) if self._content is not None else None


class MultipartParser:
    """Streaming multipart/form-data parser: fed chunk by chunk, keeps only a small tail."""

    def __init__(self, boundary):
        self.delimiter = b"\r\n--" + boundary.encode()
        self.buffer = b"\r\n"     # so that the first boundary looks like every later one
        self.state = "preamble"
        self.parts = []
        self.closed = False       # saw the closing `--boundary--`

    def feed(self, data):
        self.buffer += data
        while True:
            if self.state in ("preamble", "body"):
                index = self.buffer.find(self.delimiter)
                if index < 0:
                    keep = len(self.delimiter) - 1
                    if len(self.buffer) > keep:
                        if self.state == "body":
                            self.parts[-1].add(self.buffer[:-keep])
                        self.buffer = self.buffer[-keep:]
                    return
                if self.state == "body":
                    self.parts[-1].add(self.buffer[:index])
                    self.parts[-1].finish()
                self.buffer = self.buffer[index + len(self.delimiter):]
                self.state = "delimiter"
            elif self.state == "delimiter":
                if len(self.buffer) < 2:
                    return
                if self.buffer[:2] == b"--":
                    self.state, self.closed, self.buffer = "epilogue", True, b""
                    return
                if self.buffer[:2] != b"\r\n":
                    raise ValueError("bad multipart delimiter line")
                self.buffer = self.buffer[2:]
                self.state = "headers"
            elif self.state == "headers":
                index = self.buffer.find(b"\r\n\r\n")
                if index < 0:
                    return
                headers = {}
                for line in self.buffer[:index].decode("utf-8").split("\r\n"):
                    key, _, value = line.partition(":")
                    headers[key.strip().lower()] = value.strip()
                self.parts.append(Part(headers))
                self.buffer = self.buffer[index + 4:]
                self.state = "body"
            else:  # epilogue
                self.buffer = b""
                return


class Upload:
    """One data-plane multipart upload."""

    def __init__(self, token, requested, parts, closed):
        self.token = token
        self.requested = requested  # the upload-request JSON body that created the URL
        self.parts = parts
        self.closed = closed
        self.id = str(uuid.uuid4())
        self.record_id = str(uuid.uuid4())
        self.reference = canonical_reference(self.record_id)


class AgentStub:
    def __init__(self, jwe="test-jwe"):
        self.jwe = jwe
        self.secret = "s3cr3t-" + uuid.uuid4().hex
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.requests = []
        self.faults = {}
        self.uploads = []
        self.upload_tokens = {}    # token -> upload-request JSON body
        self.blobs = {}            # download id -> bytes (data-plane GET)
        self.file_sources = {}     # (transfer_method, reference_or_url) -> (filename, bytes)
        self.config_skills = {}    # name -> zip bytes
        self.config_files = {}     # name -> bytes
        self.manifest = {"skills": {"items": []}, "files": {"items": []}, "env": {"items": []},
                         "note": "", "prompt": ""}
        self.manifest_raw = None   # bytes served verbatim instead of `manifest`
        self.read_only = False     # PUT note/prompt, config push, env patch answer 403
        self.connection = {"connection_id": "conn-1", "status": "connected"}
        self.knowledge_response = None  # callable(payload dict) -> bytes, else an echo
        self.home_snapshot = None  # bytes of the last PUT, served by GET
        self.drive_items = []      # dicts: key, size?, mime_type?, hash?, content? (bytes)
        self.download_delay = 0.0  # seconds before each data-plane download answer
        self.downloads_in_flight = 0
        self.max_downloads_in_flight = 0
        self.server = None

    # -- lifecycle -----------------------------------------------------------------
    def start(self, port=0):
        stub = self

        class Handler(StubHandler):
            pass
        Handler.stub = stub
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.base = self.url + PREFIX
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()      # releases hung handlers
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    # -- helpers for tests -----------------------------------------------------------
    def add_blob(self, content, extra_query=""):
        """Store bytes behind a signed download URL; returns the URL."""
        blob_id = uuid.uuid4().hex
        self.blobs[blob_id] = content
        return f"{self.url}/data/download/{blob_id}?sig={self.secret}{extra_query}"

    def control(self, method=None, path=None):
        """Recorded control-plane requests (paths without /agent-stub), optionally filtered."""
        out = []
        for r in list(self.requests):
            if not r.path.startswith(PREFIX + "/"):
                continue
            if method and r.method != method:
                continue
            if path and r.path[len(PREFIX):] != path:
                continue
            out.append(r)
        return out

    def routes(self):
        """A short list of what was called, e.g. ["POST /files/upload-request", "upload"]."""
        return [route_of(r.method, r.path) for r in list(self.requests)]

    def wait_for(self, route, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if route in self.routes():
                return True
            time.sleep(0.02)
        return False


def route_of(method, path):
    if path.startswith("/data/upload/"):
        return "upload"
    if path.startswith("/data/download/"):
        return "download"
    if path.startswith(PREFIX + "/"):
        return f"{method} {path[len(PREFIX):]}"
    return f"{method} {path}"


def dumps(value, pretty=False):
    if pretty:
        return json.dumps(value, indent=2, ensure_ascii=False).encode()
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


class StubHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    stub = None  # set per server

    def log_message(self, *args):   # keep test output clean
        pass

    # every method goes through one dispatcher
    def do_GET(self):
        self.dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    # -- body handling -------------------------------------------------------------
    def body_chunks(self):
        """Yield the request body; decodes chunked transfer coding by hand."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    raise ConnectionError("eof in chunk size")
                size = int(line.split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return
                remaining = size
                while remaining:
                    data = self.rfile.read(min(remaining, READ_SIZE))
                    if not data:
                        raise ConnectionError("eof in chunk")
                    remaining -= len(data)
                    yield data
                if self.rfile.readline(3) not in (b"\r\n", b"\n"):
                    raise ConnectionError("missing CRLF after chunk")
        else:
            remaining = int(self.headers.get("Content-Length") or 0)
            while remaining:
                data = self.rfile.read(min(remaining, READ_SIZE))
                if not data:
                    raise ConnectionError("eof in body")
                remaining -= len(data)
                yield data

    def read_body(self, rec, sink=None, pause=0.0):
        digest, kept = hashlib.sha256(), bytearray()
        for data in self.body_chunks():
            digest.update(data)
            rec.size += len(data)
            if kept is not None:
                kept += data
                if len(kept) > KEEP_LIMIT:
                    kept = None
            if sink:
                sink(data)
            if pause:
                time.sleep(pause)
        rec.sha256 = digest.hexdigest()
        rec.body = bytes(kept) if kept is not None else None
        rec.complete = True

    # -- answers ---------------------------------------------------------------------
    def answer(self, rec, code, body=b"", content_type="application/json", headers=None):
        body = body.encode() if isinstance(body, str) else body
        rec.response_status, rec.response_body = code, body
        self.send_response(code)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if code == 204:
            self.end_headers()
            return
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def detail(self, rec, code, message, error_code=None):
        detail = {"code": error_code, "message": message} if error_code else message
        self.answer(rec, code, dumps({"detail": detail}))

    def apply_fault(self, rec, fault):
        if fault.kind == "hang":
            self.close_connection = True
            self.stub.stopping.wait(120)
            return
        if fault.kind == "close":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self.read_body(rec, pause=fault.pause if fault.kind == "slow_read" else 0.0)
        if fault.kind == "streamed":
            rec.response_status, rec.response_body = fault.status, b""
            self.send_response(fault.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(fault.size))
            self.end_headers()
            block = b'{"skills":{"items":[' + b" " * ((1 << 20) - 20)
            sent = 0
            try:
                while sent < fault.size:
                    piece = block[:min(len(block), fault.size - sent)]
                    self.wfile.write(piece)
                    sent += len(piece)
                    block = block if sent > len(block) else b" " * len(block)
            except OSError:
                self.close_connection = True  # the client stopped reading: as it should
            return
        if fault.kind in ("status", "slow_read"):
            self.answer(rec, fault.status, fault.body, fault.headers.get("Content-Type"))
        elif fault.kind == "redirect":
            self.answer(rec, fault.status, b"", None, {"Location": fault.location})
        elif fault.kind == "slow":
            rec.response_status, rec.response_body = fault.status, fault.body
            self.send_response(fault.status)
            self.send_header("Content-Type", fault.headers["Content-Type"])
            self.send_header("Content-Length", str(len(fault.body)))
            self.end_headers()
            step = max(1, -(-len(fault.body) // fault.pieces))
            for start in range(0, len(fault.body), step):
                self.wfile.write(fault.body[start:start + step])
                self.wfile.flush()
                if self.stub.stopping.wait(fault.pause):
                    return

    # -- dispatch --------------------------------------------------------------------
    def dispatch(self):
        stub = self.stub
        rec = Recorded(self.command, self.path, self.headers)
        with stub.lock:
            stub.requests.append(rec)
        route = route_of(rec.method, rec.path)
        try:
            if rec.path.startswith("/data/"):
                if rec.query.get("sig") != [stub.secret]:
                    self.read_body(rec)
                    return self.answer(rec, 403, b"bad signature", "text/plain")
            elif rec.path.startswith(PREFIX + "/"):
                if self.headers.get("Authorization") != "Bearer " + stub.jwe:
                    self.read_body(rec)
                    return self.detail(rec, 401, "missing or invalid bearer token")
            else:
                self.read_body(rec)
                return self.answer(rec, 404, b"no such route", "text/plain")
            fault = stub.faults.get(route)
            if fault is not None:
                return self.apply_fault(rec, fault)
            handler = ROUTES.get(route)
            if handler is None:
                self.read_body(rec)
                return self.detail(rec, 404, f"no route {route}")
            handler(self, rec)
        except (ConnectionError, BrokenPipeError, ValueError):
            self.close_connection = True

    # -- control-plane routes ------------------------------------------------------
    def post_connections(self, rec):
        self.read_body(rec)
        body = self.stub.connection
        self.answer(rec, 200, body if isinstance(body, (bytes, str)) else dumps(body))

    def post_upload_request(self, rec):
        self.read_body(rec)
        token = uuid.uuid4().hex
        self.stub.upload_tokens[token] = rec.json()
        url = f"{self.stub.url}/data/upload/{token}?sig={self.stub.secret}"
        self.answer(rec, 200, dumps({"upload_url": url, "expires_at": "2030-01-01T00:00:00Z"}))

    def post_download_request(self, rec):
        self.read_body(rec)
        stub, body = self.stub, rec.json()
        if "config" in body:
            kind, name = body["config"]["kind"], body["config"]["name"]
            store = stub.config_skills if kind == "skill" else stub.config_files
            if name not in store:
                return self.detail(rec, 404, f"config {kind} {name} not found", "config_not_found")
            filename = name + ".zip" if kind == "skill" else name
            return self.answer(rec, 200, dumps({"download_url": stub.add_blob(store[name]),
                                                "filename": filename}))
        mapping = body["file"]
        key = mapping.get("reference", mapping.get("url"))
        if body.get("for_frontend"):
            # A browser link; the `&` checks that the CLI's JSON escapes it Go style.
            content = next((u.parts[0].content for u in stub.uploads
                            if u.reference == key and u.parts), b"")
            url = stub.add_blob(content or b"", "&disposition=attachment")
            return self.answer(rec, 200, dumps({"download_url": url, "filename": "f"}))
        source = stub.file_sources.get((mapping["transfer_method"], key))
        if source is None:
            return self.detail(rec, 404, "file not found")
        filename, content = source
        self.answer(rec, 200, dumps({"download_url": stub.add_blob(content),
                                     "filename": filename, "size": len(content)}))

    def get_manifest(self, rec):
        self.read_body(rec)
        stub = self.stub
        raw = stub.manifest_raw if stub.manifest_raw is not None else dumps(stub.manifest, True)
        self.answer(rec, 200, raw)

    def read_only_answer(self, rec):
        self.detail(rec, 403, "snapshot configurations are read-only", "config_read_only")

    def post_config_push(self, rec):
        self.read_body(rec)
        if self.stub.read_only:
            return self.read_only_answer(rec)
        body = rec.json()
        self.answer(rec, 200, dumps({"skills": [i["name"] for i in body.get("skills") or []],
                                     "files": [i["name"] for i in body.get("files") or []],
                                     "revision": 7}))

    def put_text(self, rec, field):
        self.read_body(rec)
        if self.stub.read_only:
            return self.read_only_answer(rec)
        text = rec.json()[field]
        self.stub.manifest[field] = text   # later manifests return it byte for byte
        self.answer(rec, 200, dumps({field: text, "revision": 3}))

    def put_note(self, rec):
        self.put_text(rec, "note")

    def put_prompt(self, rec):
        self.put_text(rec, "prompt")

    def patch_env(self, rec):
        self.read_body(rec)
        if self.stub.read_only:
            return self.read_only_answer(rec)
        lines = [l for l in rec.json()["env_text"].splitlines() if l.strip()]
        self.answer(rec, 200, dumps({"env": {"updated": len(lines)}}))

    def post_knowledge(self, rec):
        self.read_body(rec)
        payload = rec.json()
        if self.stub.knowledge_response is not None:
            return self.answer(rec, 200, self.stub.knowledge_response(payload))
        # Pretty-printed on purpose: the CLI must compact it (whitespace in strings stays).
        text = ('{\n  "version": 1,\n  "command_id": %s,\n  "command": %s,\n'
                '  "status": "ok",\n  "result": {\n    "text": "a  b\\n\\u00e9 \\"q\\"",\n'
                '    "items": [ 1, 2 ]\n  }\n}\n'
                % (json.dumps(payload.get("command_id")), json.dumps(payload.get("command"))))
        self.answer(rec, 200, text)

    def put_home_snapshot(self, rec):
        self.read_body(rec)
        self.stub.home_snapshot = rec.body
        self.answer(rec, 204)

    def get_home_snapshot(self, rec):
        self.read_body(rec)
        if self.stub.home_snapshot is None:
            return self.detail(rec, 404, "no home snapshot")
        self.answer(rec, 200, self.stub.home_snapshot, "application/zstd")

    def get_drive_manifest(self, rec):
        self.read_body(rec)
        prefix = rec.query.get("prefix", [""])[0]
        with_urls = rec.query.get("include_download_url", ["false"])[0] == "true"
        items = []
        for item in self.stub.drive_items:
            if not item["key"].startswith(prefix):
                continue
            out = {k: v for k, v in item.items() if k != "content"}
            if with_urls and "content" in item:
                out["download_url"] = self.stub.add_blob(item["content"])
            items.append(out)
        self.answer(rec, 200, dumps({"items": items}))

    def post_drive_commit(self, rec):
        self.read_body(rec)
        self.answer(rec, 200, dumps({"committed": len(rec.json()["items"])}))

    # -- data plane ------------------------------------------------------------------
    def data_upload(self, rec):
        token = rec.path.rsplit("/", 1)[-1]
        content_type = email.message.Message()
        content_type["content-type"] = self.headers.get("Content-Type", "")
        boundary = content_type.get_param("boundary", header="content-type")
        if not boundary or token not in self.stub.upload_tokens:
            self.read_body(rec)
            return self.answer(rec, 400, b"expected multipart/form-data", "text/plain")
        parser = MultipartParser(boundary)
        self.read_body(rec, sink=parser.feed)
        upload = Upload(token, self.stub.upload_tokens[token], parser.parts, parser.closed)
        with self.stub.lock:
            self.stub.uploads.append(upload)
        self.answer(rec, 201, dumps({"reference": upload.reference, "id": upload.id}))

    def data_download(self, rec):
        self.read_body(rec)
        stub = self.stub
        with stub.lock:
            stub.downloads_in_flight += 1
            stub.max_downloads_in_flight = max(stub.max_downloads_in_flight,
                                               stub.downloads_in_flight)
        try:
            if stub.download_delay:
                stub.stopping.wait(stub.download_delay)
            content = stub.blobs.get(rec.path.rsplit("/", 1)[-1])
            if content is None:
                return self.answer(rec, 404, b"gone", "text/plain")
            self.answer(rec, 200, content, "application/octet-stream")
        finally:
            with stub.lock:
                stub.downloads_in_flight -= 1


ROUTES = {
    "POST /connections": StubHandler.post_connections,
    "POST /files/upload-request": StubHandler.post_upload_request,
    "POST /files/download-request": StubHandler.post_download_request,
    "GET /config/manifest": StubHandler.get_manifest,
    "POST /config/push": StubHandler.post_config_push,
    "PUT /config/note": StubHandler.put_note,
    "PUT /config/prompt": StubHandler.put_prompt,
    "PATCH /config/env": StubHandler.patch_env,
    "POST /knowledge/commands": StubHandler.post_knowledge,
    "PUT /home-snapshots/archive": StubHandler.put_home_snapshot,
    "GET /home-snapshots/archive": StubHandler.get_home_snapshot,
    "GET /drive/manifest": StubHandler.get_drive_manifest,
    "POST /drive/commit": StubHandler.post_drive_commit,
    "upload": StubHandler.data_upload,
    "download": StubHandler.data_download,
}


def main():
    import argparse
    import signal
    parser = argparse.ArgumentParser(description="The test Agent Stub, on 127.0.0.1, until Ctrl-C.")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--jwe", default="try-me", help="the bearer token it accepts")
    args = parser.parse_args()
    stub = AgentStub(jwe=args.jwe).start(args.port)
    print(f"export DIFY_AGENT_STUB_API_BASE_URL={stub.url} DIFY_AGENT_STUB_AUTH_JWE={args.jwe}", flush=True)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    stub.stop()


if __name__ == "__main__":
    main()
