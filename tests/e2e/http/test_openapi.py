"""GET /openapi.json: behind the token like every route, an OpenAPI 3.1 document that a real
validator (swagger-parser, from npm) accepts, listing exactly the routes the server serves:
each documented operation answers something other than 404/405, and a path beside them 404s.
Real answers of every kind are checked against the document's schemas (ajv), so the
document describes what the server sends, extra fields included (none are allowed)."""
import json
import os
import subprocess
import tempfile
import unittest

from harness import Server, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "openapi-token"


class OpenAPITest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(token=TOKEN)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def real_answers(self):
        s = self.server
        out = [["Health", s.ok("GET", "/healthz")]]
        res, _ = s.run_to_completion("echo hi; exit 3")
        out.append(["JobResult", res])
        job = res["job_id"]
        out.append(["JobResult", s.ok("POST", f"/v1/jobs/{job}/wait", {"offset": 0})])
        out.append(["JobResult", s.ok("GET", f"/v1/jobs/{job}/log/tail")])
        out.append(["JobStatusView", s.ok("GET", f"/v1/jobs/{job}")])
        out.append(["JobList", s.ok("GET", "/v1/jobs")])
        running = s.run("sleep 60", timeout=0.2)
        out.append(["JobResult", running])
        out.append(["JobStatusView", s.ok("POST", f"/v1/jobs/{running['job_id']}/terminate",
                                          {"grace_seconds": 0})])
        out.append(["JobDeleted", s.ok("DELETE", f"/v1/jobs/{job}")])
        status, _, err = s.request("GET", "/v1/jobs/0123456789abcdef")
        self.assertEqual(status, 404)
        out.append(["Error", err])
        # The file API's answers (docs/api.md "Files").
        out.append(["FileWritten", s.ok("PUT", "/v1/files/content?path=d/f.txt&parents=true", raw_body=b"abc")])
        out.append(["FileStat", s.ok("GET", "/v1/files/stat?path=d/f.txt")])
        os.symlink("f.txt", os.path.join(s.home, "d", "l"))
        out.append(["FileStat", s.ok("GET", "/v1/files/stat?path=d/l")])
        out.append(["FileList", s.ok("GET", "/v1/files/list?path=d")])
        out.append(["FilePath", s.ok("POST", "/v1/files/mkdir", {"path": "d/e", "mode": "0700"})])
        out.append(["FilePath", s.ok("POST", "/v1/files/move", {"from": "d/e", "to": "d/g"})])
        out.append(["FileDeleted", s.ok("DELETE", "/v1/files?path=d&recursive=true")])
        # Job control and info (docs/api.md "Job control", "Info"): a running PTY job, then the
        # same finished.
        live = s.run("read -r x", timeout=0.3)["job_id"]
        out.append(["JobActivity", s.ok("GET", f"/v1/jobs/{live}/activity")])
        out.append(["JobStatusView", s.ok("POST", f"/v1/jobs/{live}/resize", {"cols": 90, "rows": 30})])
        out.append(["JobStatusView", s.ok("POST", f"/v1/jobs/{live}/signal", {"signal": "KILL"})])
        s.run_to_completion("true")
        out.append(["JobActivity", s.ok("GET", f"/v1/jobs/{live}/activity")])
        out.append(["Info", s.ok("GET", "/v1/info")])
        # What jobs listen on: one left running by a finished job (IPv4 and IPv6).
        left, _ = s.run_to_completion(
            "nohup /usr/bin/python3 -c 'import socket, time\n"
            "a = socket.socket(); a.bind((\"127.0.0.1\", 0)); a.listen()\n"
            "b = socket.socket(socket.AF_INET6); b.bind((\"::1\", 0)); b.listen(); time.sleep(60)' >/dev/null 2>&1 &")
        ports = wait_until(lambda: (lambda p: p if len(p["ports"]) == 2 else None)(s.ok("GET", "/v1/ports")),
                           timeout=30, what="two listeners")
        out.append(["PortList", ports])
        s.ok("DELETE", f"/v1/jobs/{left['job_id']}")
        return out

    def test_needs_the_token(self):
        status, _, _ = self.server.request("GET", "/openapi.json", auth=False)
        self.assertEqual(status, 401)

    def test_document_validates_and_matches_the_served_routes(self):
        status, headers, body = self.server.request("GET", "/openapi.json")
        self.assertEqual(status, 200)
        doc = body if isinstance(body, dict) else json.loads(body)
        self.assertEqual(doc["openapi"], "3.1.0")
        samples = self.real_answers()
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f, \
                tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as g:
            json.dump(doc, f)
            json.dump(samples, g)
        try:
            r = subprocess.run(["node", os.path.join(HERE, "validate_openapi.js"), f.name, g.name],
                               capture_output=True, text=True, timeout=120)
        finally:
            os.unlink(f.name)
            os.unlink(g.name)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "valid"), r.stderr)
        operations = [(m.upper(), p) for p, ops in doc["paths"].items() for m in ops]
        self.assertEqual(len(operations), 26)
        for method, pattern in operations:
            path = pattern.replace("{job_id}", "0123456789abcdef")
            body = None if method in ("GET", "DELETE") else {}
            if pattern == "/v1/snapshot/restore":
                continue  # an empty body would be a (malformed) restore: checked elsewhere
            status, _, answer = self.server.request(method, path, body=body)
            self.assertNotEqual(status, 405, (method, pattern))
            if status == 404:  # only an unknown job, never an unknown route
                self.assertEqual(answer["error"]["code"], "job_not_found", (method, pattern))
        status, _, answer = self.server.request("GET", "/v1/undocumented")
        self.assertEqual((status, answer["error"]["code"]), (404, "not_found"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
