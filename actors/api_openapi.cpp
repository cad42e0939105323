#include "actors/api_openapi.hpp"

#include <cctype>
#include <map>

#include "actors/routes.hpp"
#include "io/json/json.hpp"

namespace shellctl::actors {

namespace {

// The shared objects of http-api.md §4 and the request bodies of §5–§7. Field sets are the
// original's exactly (its Python client rejects extra fields).
const char* components = R"({
  "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
  "schemas": {
    "JobResult": {"type": "object", "additionalProperties": false,
      "required": ["job_id", "done", "status", "exit_code", "output_path", "output", "offset", "truncated"],
      "properties": {
        "job_id": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
        "done": {"type": "boolean"},
        "status": {"$ref": "#/components/schemas/JobStatus"},
        "exit_code": {"type": ["integer", "null"]},
        "output_path": {"type": "string"},
        "output": {"type": "string"},
        "offset": {"type": "integer", "minimum": 0},
        "truncated": {"type": "boolean"}}},
    "JobStatusView": {"type": "object", "additionalProperties": false,
      "required": ["job_id", "status", "done", "exit_code", "created_at", "started_at", "ended_at", "offset"],
      "properties": {
        "job_id": {"type": "string"},
        "status": {"$ref": "#/components/schemas/JobStatus"},
        "done": {"type": "boolean"},
        "exit_code": {"type": ["integer", "null"]},
        "created_at": {"type": "string", "format": "date-time", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"},
        "started_at": {"type": ["string", "null"], "format": "date-time", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"},
        "ended_at": {"type": ["string", "null"], "format": "date-time", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"},
        "offset": {"type": "integer", "minimum": 0}}},
    "JobInfo": {"type": "object", "additionalProperties": false,
      "required": ["job_id", "status", "created_at"],
      "properties": {
        "job_id": {"type": "string"},
        "status": {"$ref": "#/components/schemas/JobStatus"},
        "created_at": {"type": "string", "format": "date-time", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"},
        "started_at": {"type": "string", "format": "date-time", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"},
        "ended_at": {"type": "string", "format": "date-time", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"}}},
    "JobList": {"type": "object", "additionalProperties": false, "required": ["jobs"],
      "properties": {"jobs": {"type": "array", "items": {"$ref": "#/components/schemas/JobInfo"}}}},
    "JobDeleted": {"type": "object", "additionalProperties": false, "required": ["job_id", "deleted"],
      "properties": {"job_id": {"type": "string"}, "deleted": {"const": true}}},
    "JobStatus": {"type": "string",
      "enum": ["created", "starting", "running", "exited", "failed", "terminated", "lost"]},
    "Terminal": {"type": "object", "properties": {"cols": {"type": "integer"}, "rows": {"type": "integer"}}},
    "RunRequest": {"type": "object", "required": ["script"],
      "properties": {
        "script": {"type": "string", "minLength": 1},
        "cwd": {"type": ["string", "null"]},
        "env": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
        "mode": {"type": ["string", "null"], "enum": ["", "pty", "stdio", null]},
        "terminal": {"oneOf": [{"$ref": "#/components/schemas/Terminal"}, {"type": "null"}]},
        "timeout": {"type": ["number", "null"], "description": "seconds; clamped to 600"},
        "output_limit": {"type": ["integer", "null"], "description": "bytes; clamped to 524288"},
        "idle_flush_seconds": {"type": ["number", "null"]}}},
    "WaitRequest": {"type": "object",
      "properties": {
        "offset": {"type": ["integer", "null"], "minimum": 0},
        "timeout": {"type": ["number", "null"]},
        "output_limit": {"type": ["integer", "null"]},
        "idle_flush_seconds": {"type": ["number", "null"]}}},
    "InputRequest": {"type": "object",
      "properties": {
        "text": {"type": ["string", "null"]},
        "offset": {"type": ["integer", "null"], "minimum": 0},
        "timeout": {"type": ["number", "null"]},
        "output_limit": {"type": ["integer", "null"]},
        "idle_flush_seconds": {"type": ["number", "null"]}}},
    "TerminateRequest": {"type": "object",
      "properties": {"grace_seconds": {"type": ["number", "null"]}}},
    "SnapshotSaveRequest": {"type": "object",
      "properties": {"excludes": {"type": ["array", "null"], "items": {"type": "string"}}}},
    "RestoreResult": {"type": "object", "additionalProperties": false, "required": ["entries", "bytes_written"],
      "properties": {"entries": {"type": "integer"}, "bytes_written": {"type": "integer"}}},
    "Health": {"type": "object", "required": ["status"], "properties": {"status": {"const": "ok"}}},
    "Error": {"type": "object", "required": ["error"],
      "properties": {"error": {"type": "object", "required": ["code", "message"],
        "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}
  }
})";

struct operation {
  const char* summary;
  const char* request;   // schema name, "" for none
  const char* response;  // schema name of the 200 body, or a raw media type
  std::vector<std::pair<const char*, const char*>> query;  // name, JSON schema
  bool auth = true;
};

operation describe(route r) {
  switch (r) {
    case route::healthz: return {"Liveness", "", "Health", {}, false};
    case route::openapi: return {"This document", "", "object", {}};
    case route::stream:
      return {"Follow a job's output as server-sent events (output, then exit); resume with Last-Event-ID",
              "", "text/event-stream", {{"offset", R"({"type":"integer","minimum":0,"default":0})"}}};
    case route::metrics: return {"Counters, gauges and histograms in Prometheus text format 0.0.4", "", "text/plain", {}};
    case route::run: return {"Create and start a job, then wait for its first output", "RunRequest", "JobResult", {}};
    case route::list:
      return {"List jobs, newest first", "", "JobList",
              {{"status", R"({"type":"string"})"}, {"limit", R"({"type":"integer","default":50,"maximum":200})"}}};
    case route::status: return {"A job's lifecycle status", "", "JobStatusView", {}};
    case route::remove:
      return {"Delete a job and its files", "", "JobDeleted",
              {{"force", R"({"type":"string","enum":["true"]})"}, {"grace_seconds", R"({"type":"number","default":10})"}}};
    case route::wait: return {"Long-poll for output or completion", "WaitRequest", "JobResult", {}};
    case route::input: return {"Type text into a PTY job, then wait", "InputRequest", "JobResult", {}};
    case route::terminate: return {"Ctrl-C, a grace period, then SIGKILL", "TerminateRequest", "JobStatusView", {}};
    case route::tail:
      return {"The last bytes of a job's output", "", "JobResult",
              {{"output_limit", R"({"type":"integer","default":16384,"maximum":524288})"}}};
    case route::snapshot_save:
      return {"Stream $HOME as tar+zstd (trailers X-Snapshot-Status, -Sha256, -Bytes)", "SnapshotSaveRequest",
              "application/octet-stream", {}};
    case route::snapshot_restore:
      return {"Extract a tar+zstd stream into $HOME", "application/zstd", "RestoreResult", {}};
  }
  return {"", "", "", {}};
}

std::string media(const std::string& what) {
  if (what.rfind("text/", 0) == 0) return "{\"" + what + "\":{\"schema\":{\"type\":\"string\"}}}";
  if (what.find('/') != std::string::npos)
    return "{\"" + what + "\":{\"schema\":{\"type\":\"string\",\"format\":\"binary\"}}}";
  if (what == "object") return R"({"application/json":{"schema":{"type":"object"}}})";
  return R"({"application/json":{"schema":{"$ref":"#/components/schemas/)" + what + "\"}}}";
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "GET /v1/jobs/{job_id}" -> "get_v1_jobs_job_id": unique, and plain for code generators.
std::string operation_id(const route_entry& e) {
  std::string id = lower(e.method);
  for (const char* c = e.pattern; *c; ++c) {
    if (std::isalnum(static_cast<unsigned char>(*c)))
      id += *c;
    else if (id.back() != '_')
      id += '_';
  }
  while (id.back() == '_') id.pop_back();
  return id;
}

std::string build() {
  std::map<std::string, std::string> paths;  // pattern -> "method": {...}, ...
  for (const auto& e : route_table()) {
    const operation op = describe(e.id);
    std::string o = "{\"summary\":";
    io::json::append_string(o, op.summary);
    o += ",\"operationId\":\"" + operation_id(e) + "\"";
    std::string params;
    if (std::string(e.pattern).find("{job_id}") != std::string::npos)
      params += R"({"name":"job_id","in":"path","required":true,"schema":{"type":"string"}})";
    for (const auto& [name, schema] : op.query)
      params += std::string(params.empty() ? "" : ",") + "{\"name\":\"" + name +
                "\",\"in\":\"query\",\"required\":false,\"schema\":" + schema + "}";
    if (!params.empty()) o += ",\"parameters\":[" + params + "]";
    if (*op.request) o += ",\"requestBody\":{\"required\":false,\"content\":" + media(op.request) + "}";
    o += ",\"responses\":{\"200\":{\"description\":\"OK\",\"content\":" + media(op.response) + "}";
    o += R"(,"default":{"description":"An error: {error: {code, message}}","content":)" + media("Error") + "}}";
    o += op.auth ? ",\"security\":[{\"bearer\":[]}]" : ",\"security\":[]";
    o += "}";
    auto& p = paths[e.pattern];
    p += std::string(p.empty() ? "" : ",") + "\"" + lower(e.method) + "\":" + o;
  }
  std::string doc = R"({"openapi":"3.1.0","info":{"title":"shellctl","version":")" SHELLCTL_VERSION
                    R"(","description":"Shell jobs in tmux for AI agents: run, page, type, interrupt, wait, delete; home snapshots."},)";
  doc += R"("security":[{"bearer":[]}],"paths":{)";
  bool first = true;
  for (const auto& [pattern, ops] : paths) {
    doc += std::string(first ? "" : ",") + "\"" + pattern + "\":{" + ops + "}";
    first = false;
  }
  doc += "},\"components\":" + std::string(components) + "}\n";
  return doc;
}

}  // namespace

const std::string& openapi_document() {
  static const std::string doc = build();
  return doc;
}

}  // namespace shellctl::actors
