"""The HTTP/1.1 front of `shellctl serve`, over raw loopback sockets.

Covers keep-alive, pipelining, chunked request bodies, Expect: 100-continue, the front's
own JSON errors (decision D13: 400/413/414/431, connection closed after them), slow
clients, many concurrent connections and a graceful SIGTERM with a request in flight.
Stdlib only; the server is the real binary started by tests/support/harness.py.
"""
import json
import os
import signal
import socket
import threading
import time
import unittest

from harness import Server

TOKEN = "front-token"


class RawConn:
    """A blocking socket with a tiny HTTP/1.1 response reader."""

    def __init__(self, port, timeout=30):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data if isinstance(data, bytes) else data.encode())

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            return False
        self.buf += chunk
        return True

    def _line(self):
        while b"\r\n" not in self.buf:
            if not self._fill():
                raise EOFError("connection closed mid-response")
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode("latin-1")

    def _exact(self, n):
        while len(self.buf) < n:
            if not self._fill():
                raise EOFError("connection closed mid-body")
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read(self, keep_interim=False):
        """Returns (status, headers with lower-case names, body bytes)."""
        while True:
            status = int(self._line().split(" ", 2)[1])
            headers = {}
            while True:
                line = self._line()
                if not line:
                    break
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            if status < 200:
                if keep_interim:
                    return status, headers, b""
                continue
            if headers.get("transfer-encoding", "").lower() == "chunked":
                body = b""
                while True:
                    size = int(self._line().split(";")[0], 16)
                    if size == 0:
                        while self._line():
                            pass
                        return status, headers, body
                    body += self._exact(size)
                    self._exact(2)
            return status, headers, self._exact(int(headers["content-length"]))

    def at_eof(self):
        """True when the server has closed the connection and nothing is left to read."""
        if self.buf:
            return False
        try:
            return not self._fill()
        except ConnectionResetError:
            return True


def error_code(body):
    return json.loads(body)["error"]["code"]


def get(path, extra=""):
    return f"GET {path} HTTP/1.1\r\nHost: t\r\n{extra}\r\n"


AUTH = f"Authorization: Bearer {TOKEN}\r\n"


class FrontTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(token=TOKEN)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def conn(self):
        c = RawConn(self.server.port)
        self.addCleanup(c.close)
        return c

    # -- keep-alive and pipelining ----------------------------------------------------------
    def test_keep_alive(self):
        c = self.conn()
        for _ in range(5):
            c.send(get("/healthz"))
            status, headers, body = c.read()
            self.assertEqual(status, 200)
            self.assertEqual(json.loads(body), {"status": "ok"})
            self.assertIn("date", headers)
            self.assertEqual(headers["content-length"], str(len(body)))
            self.assertNotEqual(headers.get("connection"), "close")

    def test_pipelined_answers_in_order(self):
        c = self.conn()
        c.send(get("/healthz") + get("/v1/nope/nope/nope", AUTH) + get("/v1/jobs")
               + f"POST /v1/jobs/run HTTP/1.1\r\n{AUTH}Content-Length: 3\r\n\r\n{{{{{{"
               + f"DELETE /healthz HTTP/1.1\r\n{AUTH}\r\n" + get("/healthz"))
        got = [c.read() for _ in range(6)]
        self.assertEqual([g[0] for g in got], [200, 404, 401, 400, 405, 200])
        self.assertEqual(error_code(got[1][2]), "not_found")
        self.assertEqual(error_code(got[2][2]), "unauthorized")
        self.assertEqual(error_code(got[3][2]), "invalid_request")
        self.assertEqual(error_code(got[4][2]), "method_not_allowed")

    def test_many_pipelined(self):
        c = self.conn()
        c.send(get("/healthz") * 300)
        for _ in range(300):
            self.assertEqual(c.read()[0], 200)

    def test_http10_and_connection_close(self):
        c = self.conn()
        c.send("GET /healthz HTTP/1.0\r\n\r\n")
        status, headers, _ = c.read()
        self.assertEqual(status, 200)
        self.assertEqual(headers.get("connection", "").lower(), "close")
        self.assertTrue(c.at_eof())
        c = self.conn()
        c.send(get("/healthz", "Connection: close\r\n"))
        self.assertEqual(c.read()[0], 200)
        self.assertTrue(c.at_eof())

    def test_head(self):
        c = self.conn()
        c.send("HEAD /healthz HTTP/1.1\r\n\r\n" + get("/healthz"))
        line = c._line()
        self.assertIn(" 200 ", line)
        headers = {}
        while True:
            h = c._line()
            if not h:
                break
            k, _, v = h.partition(":")
            headers[k.lower()] = v.strip()
        self.assertIn("content-length", headers)
        # No body: the next response follows the blank line directly.
        self.assertEqual(c.read()[0], 200)

    # -- request bodies -----------------------------------------------------------------------
    def test_chunked_request_body(self):
        c = self.conn()
        c.send(f"POST /v1/jobs/run HTTP/1.1\r\n{AUTH}Transfer-Encoding: chunked\r\n\r\n"
               "5;ext=1\r\n{\"scr\r\n6\r\nipt\": \r\n")
        time.sleep(0.05)
        c.send("1\r\n1\r\n1\r\n}\r\n0\r\nX-Trailer: t\r\n\r\n")
        status, _, body = c.read()
        # {"script": 1} is a type error: proves the whole chunked body reached the decoder.
        self.assertEqual(status, 400)
        self.assertEqual(error_code(body), "invalid_request")
        c.send(get("/healthz"))
        self.assertEqual(c.read()[0], 200)

    def test_expect_100_continue(self):
        c = self.conn()
        body = b'{"script": ""}'
        c.send(f"POST /v1/jobs/run HTTP/1.1\r\n{AUTH}Content-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n")
        status, _, _ = c.read(keep_interim=True)
        self.assertEqual(status, 100)
        c.send(body)
        status, _, resp = c.read()
        self.assertEqual(status, 400)
        self.assertEqual(error_code(resp), "invalid_request")

    def test_expect_100_continue_refused_when_too_large(self):
        c = self.conn()
        c.send(f"POST /v1/jobs/run HTTP/1.1\r\n{AUTH}Content-Length: {64 * 1024 * 1024 + 1}\r\n"
               "Expect: 100-continue\r\n\r\n")
        status, headers, body = c.read(keep_interim=True)
        self.assertEqual(status, 413)
        self.assertEqual(error_code(body), "payload_too_large")

    # -- the front's own errors (D13) -----------------------------------------------------
    def assert_front_error(self, c, status, code):
        got, headers, body = c.read()
        self.assertEqual(got, status)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(headers.get("connection", "").lower(), "close")
        self.assertTrue(body.endswith(b"\n"))
        self.assertEqual(error_code(body), code)
        self.assertIsInstance(json.loads(body)["error"]["message"], str)
        self.assertTrue(c.at_eof())

    def test_body_too_large(self):
        c = self.conn()
        c.send(f"POST /v1/jobs/run HTTP/1.1\r\n{AUTH}Content-Length: {64 * 1024 * 1024 + 1}"
               "\r\n\r\n")
        # The client keeps sending; the server answers 413 anyway and closes.
        try:
            c.send(b"x" * (256 * 1024))
        except OSError:
            pass
        self.assert_front_error(c, 413, "payload_too_large")

    def test_chunked_body_too_large(self):
        c = self.conn()
        c.send(f"POST /v1/jobs/run HTTP/1.1\r\n{AUTH}Transfer-Encoding: chunked\r\n\r\n")
        chunk = b"100000\r\n" + b"x" * 0x100000 + b"\r\n"
        try:
            for _ in range(65):
                c.send(chunk)
        except OSError:
            pass  # the server may close once it has answered
        self.assert_front_error(c, 413, "payload_too_large")

    def test_headers_too_large(self):
        c = self.conn()
        c.send(get("/healthz", "X-Big: " + "h" * (70 * 1024) + "\r\n"))
        self.assert_front_error(c, 431, "headers_too_large")

    def test_many_headers_too_large(self):
        c = self.conn()
        c.send(get("/healthz", "".join(f"X-H{i}: {'v' * 100}\r\n" for i in range(1000))))
        self.assert_front_error(c, 431, "headers_too_large")

    def test_request_line_too_long(self):
        c = self.conn()
        c.send(get("/" + "u" * (17 * 1024)))
        self.assert_front_error(c, 414, "uri_too_long")

    def test_malformed_requests(self):
        for raw in [b"HELLO\r\n\r\n", b"GET\r\n\r\n", b"GET / HTTP/7.0\r\n\r\n",
                    b"GET /a b c HTTP/1.1\r\n\r\n", b"GET / HTTP/1.1\r\nNoColon\r\n\r\n",
                    b"\x00\x01\x02\x03\r\n\r\n",
                    b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                    b"POST / HTTP/1.1\r\nContent-Length: 2\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n"]:
            with self.subTest(raw=raw):
                c = self.conn()
                c.send(raw)
                self.assert_front_error(c, 400, "bad_request")

    def test_error_after_good_request_in_pipeline(self):
        c = self.conn()
        c.send(get("/healthz") + "BROKEN LINE\r\n\r\n")
        self.assertEqual(c.read()[0], 200)
        self.assert_front_error(c, 400, "bad_request")

    # -- slow and many clients ---------------------------------------------------------------
    def test_slow_but_steady_client(self):
        # `shellctl serve` has no flag for the request timeout (60 s): a client that dribbles
        # its request a byte at a time must still be served.
        c = self.conn()
        req = (f"POST /v1/jobs/run HTTP/1.1\r\n{AUTH}Content-Length: 2\r\n\r\n{{}}").encode()
        for i in range(len(req)):
            c.send(req[i:i + 1])
            time.sleep(0.01)
        status, _, body = c.read()
        self.assertEqual(status, 400)
        self.assertEqual(error_code(body), "invalid_request")

    def test_250_concurrent_connections(self):
        conns = [self.conn() for _ in range(250)]
        for c in conns:
            c.send(get("/healthz"))
        for c in conns:
            self.assertEqual(c.read()[0], 200)
        # And all of them again, in parallel from threads.
        errors = []

        def worker(c):
            try:
                for _ in range(3):
                    c.send(get("/v1/jobs/x/y/z", AUTH))
                    if c.read()[0] != 404:
                        errors.append("status")
            except Exception as e:  # noqa: BLE001 - collected and reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=worker, args=(c,)) for c in conns]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])


class ShutdownTest(unittest.TestCase):
    def test_sigterm_with_request_in_flight(self):
        with Server(token=TOKEN) as srv:
            idle = RawConn(srv.port)
            self.addCleanup(idle.close)
            idle.send(get("/healthz"))
            self.assertEqual(idle.read()[0], 200)
            # A job that prints only after 2 s, then a long-poll wait on it: that wait is
            # the request in flight when SIGTERM arrives.
            started = srv.run("sleep 2; echo finished", mode="stdio", timeout=0.1)
            busy = RawConn(srv.port)
            self.addCleanup(busy.close)
            body = json.dumps({"offset": started["offset"], "timeout": 20}).encode()
            busy.send(f"POST /v1/jobs/{started['job_id']}/wait HTTP/1.1\r\n{AUTH}"
                      f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                      .encode() + body)
            time.sleep(0.5)  # let the wait reach the job actor
            srv.proc.send_signal(signal.SIGTERM)
            status, headers, resp = busy.read()
            self.assertEqual(status, 200)
            self.assertIn("finished", json.loads(resp)["output"])
            self.assertEqual(headers.get("connection", "").lower(), "close")
            self.assertTrue(idle.at_eof())
            self.assertEqual(srv.proc.wait(30), 0)
            # The listener is gone.
            with self.assertRaises(OSError):
                socket.create_connection(("127.0.0.1", srv.port), timeout=5).close()

    def test_sigterm_idle_exits_zero(self):
        with Server() as srv:
            self.assertEqual(srv.request("GET", "/healthz", auth=False)[0], 200)
            self.assertEqual(srv.stop(signal.SIGTERM), 0)


if __name__ == "__main__":
    unittest.main()
