#include "actors/edge/openapi.hpp"

#include <cctype>
#include <map>

#include "actors/protocol/routes.hpp"
#include "io/json/json.hpp"

namespace shellctl::actors {

namespace {

// The shared response objects and the request bodies of the job routes (docs/api.md "Jobs").
// Field sets are the original's exactly (its Python client rejects extra fields).
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
        "idle_flush_seconds": {"type": ["number", "null"]},
        "stdin": {"type": ["string", "null"], "enum": ["pipe", "null", "", null],
          "description": "pipe: a stdio job's stdin that /input writes to; default /dev/null"},
        "limits": {"oneOf": [{"type": "null"}, {"type": "object", "additionalProperties": false,
          "description": "the job's own cgroup limits, within the server's (GET /v1/info: job_limits); a field whose controller the job cgroups lack is 422",
          "properties": {"memory_bytes": {"type": ["integer", "null"], "minimum": 1048576, "description": "memory.max: the OOM killer ends the job's processes past it"},
            "pids": {"type": ["integer", "null"], "minimum": 1, "description": "pids.max: processes and threads at once, its init included"},
            "cpu": {"type": ["number", "null"], "minimum": 0.01, "maximum": 4096, "description": "cpu.max in CPUs: 0.5 is half of one"}}}]}}},
    "WaitRequest": {"type": "object",
      "properties": {
        "offset": {"type": ["integer", "null"], "minimum": 0},
        "timeout": {"type": ["number", "null"]},
        "output_limit": {"type": ["integer", "null"]},
        "idle_flush_seconds": {"type": ["number", "null"]}}},
    "InputRequest": {"type": "object",
      "properties": {
        "text": {"type": ["string", "null"]},
        "eof": {"type": ["boolean", "null"],
          "description": "then close a piped stdin; a PTY job gets its terminal's EOF character, Ctrl-D"},
        "offset": {"type": ["integer", "null"], "minimum": 0},
        "timeout": {"type": ["number", "null"]},
        "output_limit": {"type": ["integer", "null"]},
        "idle_flush_seconds": {"type": ["number", "null"]}}},
    "SignalRequest": {"type": "object", "required": ["signal"],
      "properties": {"signal": {"oneOf": [
        {"type": "string", "description": "INT TERM KILL HUP QUIT USR1 USR2 STOP CONT WINCH, with or without SIG, any case, or the number as a string"},
        {"type": "integer", "enum": [2, 15, 9, 1, 3, 10, 12, 19, 18, 28]}]}}},
    "JobActivity": {"type": "object", "additionalProperties": false,
      "required": ["job_id", "status", "done", "offset", "waiting_for_input", "idle_seconds", "foreground", "terminal", "processes", "ended"],
      "properties": {
        "job_id": {"type": "string"},
        "status": {"$ref": "#/components/schemas/JobStatus"},
        "done": {"type": "boolean"},
        "offset": {"type": "integer", "minimum": 0},
        "waiting_for_input": {"type": "boolean"},
        "idle_seconds": {"type": "number", "minimum": 0},
        "foreground": {"oneOf": [{"type": "null"}, {"type": "object", "required": ["pid", "command"],
          "properties": {"pid": {"type": "integer"}, "command": {"type": "string"}}}]},
        "terminal": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Terminal"}]},
        "processes": {"type": "integer", "minimum": 0},
        "ended": {"oneOf": [{"type": "null"}, {"type": "object", "required": ["by", "signal", "limits_hit"],
          "description": "why a finished job ended; null while it runs",
          "properties": {"by": {"type": "string", "enum": ["exit", "signal", "limit", "oom", "terminate", "deadline", "failed", "lost"],
              "description": "limit: the OOM killer at the job's own memory limit; oom: the machine's OOM killer"},
            "signal": {"type": ["string", "null"], "description": "the signal that ended its main process, without SIG"},
            "limits_hit": {"type": "array", "items": {"type": "string", "enum": ["memory_bytes", "pids", "cpu"]},
              "description": "the limits the kernel held the job to: its memory limit reached, a fork refused, its CPU throttled"}}}]}}},
    "ResizeRequest": {"type": "object", "required": ["cols", "rows"],
      "properties": {"cols": {"type": "integer", "minimum": 1, "maximum": 4096},
                     "rows": {"type": "integer", "minimum": 1, "maximum": 4096}}},
    "Info": {"type": "object", "additionalProperties": false, "required": ["version", "api", "isolation", "limits", "job_limits"],
      "properties": {
        "version": {"type": "string"},
        "api": {"type": "array", "items": {"type": "string"}},
        "isolation": {"type": "object", "required": ["landlock_abi", "cgroup", "cgroup_nsdelegate", "api_refuses_jobs", "oom_score_adj", "job_sandbox"],
          "properties": {"landlock_abi": {"type": ["integer", "null"]}, "cgroup": {"type": "string", "enum": ["v2", "none"]},
            "cgroup_nsdelegate": {"type": ["boolean", "null"], "description": "whether the host mounts cgroup2 with nsdelegate; containment holds either way"},
            "api_refuses_jobs": {"type": "boolean", "description": "a job's connection to this API is closed before a byte is read — its socket's cgroup, from the kernel"},
            "oom_score_adj": {"type": "object", "required": ["server", "jobs"],
              "description": "the OOM killer's adjustments: the server's own, which its tmux server and helpers inherit, and every job process's",
              "properties": {"server": {"type": ["integer", "null"]}, "jobs": {"type": "integer"}}},
            "job_sandbox": {"type": "object", "required": ["ok", "problem"], "additionalProperties": false,
              "description": "whether jobs can start: the startup probe builds the world a job gets; when it cannot, every job fails with exit code 125 and problem says why, as the startup warning does",
              "properties": {"ok": {"type": "boolean"}, "problem": {"type": ["string", "null"]}}}}},
        "limits": {"type": "object", "required": ["timeout_max", "output_limit_max"],
          "properties": {"timeout_max": {"type": "number"}, "output_limit_max": {"type": "integer"}}},
        "job_limits": {"type": "object", "required": ["available", "ceilings"],
          "description": "a run's limits: the fields this server can give (its job cgroups have their controllers) and the server's own limit of each, which a run's may not pass",
          "properties": {"available": {"type": "array", "items": {"type": "string", "enum": ["memory_bytes", "pids", "cpu"]}},
            "ceilings": {"type": "object", "required": ["memory_bytes", "pids", "cpu"],
              "properties": {"memory_bytes": {"type": ["integer", "null"]}, "pids": {"type": ["integer", "null"]}, "cpu": {"type": ["number", "null"]}}}}}}},
    "TerminateRequest": {"type": "object",
      "properties": {"grace_seconds": {"type": ["number", "null"]}}},
    "SnapshotSaveRequest": {"type": "object",
      "properties": {"excludes": {"type": ["array", "null"], "items": {"type": "string"}}}},
    "RestoreResult": {"type": "object", "additionalProperties": false, "required": ["entries", "bytes_written"],
      "properties": {"entries": {"type": "integer"}, "bytes_written": {"type": "integer"}}},
    "FileEntry": {"type": "object", "additionalProperties": false,
      "required": ["name", "type", "size", "mode", "mtime"],
      "properties": {
        "name": {"type": "string"},
        "type": {"type": "string", "enum": ["file", "dir", "symlink", "other"]},
        "size": {"type": "integer", "minimum": 0},
        "mode": {"type": "string", "pattern": "^[0-7]{4}$"},
        "mtime": {"type": "string", "format": "date-time"}}},
    "PortList": {"type": "object", "additionalProperties": false, "required": ["ports"],
      "properties": {"ports": {"type": "array", "items": {"type": "object", "additionalProperties": false,
        "required": ["job_id", "port", "address", "family"],
        "properties": {"job_id": {"type": "string"}, "port": {"type": "integer", "minimum": 1, "maximum": 65535},
          "address": {"type": "string"}, "family": {"type": "string", "enum": ["ipv4", "ipv6"]}}}}}},
    "FileStat": {"type": "object", "additionalProperties": false,
      "required": ["path", "type", "size", "mode", "mtime"],
      "properties": {
        "path": {"type": "string"},
        "type": {"type": "string", "enum": ["file", "dir", "symlink", "other"]},
        "size": {"type": "integer", "minimum": 0},
        "mode": {"type": "string", "pattern": "^[0-7]{4}$"},
        "mtime": {"type": "string", "format": "date-time"},
        "target": {"type": "string", "description": "a symlink text; lstat never follows it"}}},
    "FileList": {"type": "object", "additionalProperties": false, "required": ["path", "entries", "truncated"],
      "properties": {
        "path": {"type": "string"},
        "entries": {"type": "array", "items": {"$ref": "#/components/schemas/FileEntry"}},
        "truncated": {"type": "boolean"}}},
    "FilePath": {"type": "object", "additionalProperties": false, "required": ["path"],
      "properties": {"path": {"type": "string"}}},
    "FileDeleted": {"type": "object", "additionalProperties": false, "required": ["path", "deleted"],
      "properties": {"path": {"type": "string"}, "deleted": {"const": true}}},
    "FileWritten": {"type": "object", "additionalProperties": false, "required": ["path", "size", "sha256"],
      "properties": {"path": {"type": "string"}, "size": {"type": "integer", "minimum": 0},
                     "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"}}},
    "MkdirRequest": {"type": "object", "required": ["path"],
      "properties": {"path": {"type": "string"}, "parents": {"type": ["boolean", "null"]},
                     "mode": {"type": ["string", "null"], "pattern": "^[0-7]{3,4}$", "default": "0755"}}},
    "MoveRequest": {"type": "object", "required": ["from", "to"],
      "properties": {"from": {"type": "string"}, "to": {"type": "string"},
                     "overwrite": {"type": ["boolean", "null"]}}},
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

// A file API path: absolute, or relative to the server's $HOME; beneath $HOME or a
// SHELLCTL_LANDLOCK_RW_PATHS tree, never the state directory.
constexpr const char* path_schema =
    R"({"type":"string","maxLength":4096,"description":"absolute, or relative to the server's HOME"})";

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
    case route::input: return {"Type text into a PTY job, or write it to a stdio job's piped stdin, then wait",
                               "InputRequest", "JobResult", {}};
    case route::terminate: return {"Ctrl-C, a grace period, then SIGKILL", "TerminateRequest", "JobStatusView", {}};
    case route::signal:
      return {"Send a signal to every process of a running job", "SignalRequest", "JobStatusView", {}};
    case route::resize:
      return {"Resize a running PTY job's terminal (its program gets SIGWINCH)", "ResizeRequest", "JobStatusView", {}};
    case route::activity:
      return {"Whether a job waits for its terminal (a prompt), how long it has been quiet, its foreground process",
              "", "JobActivity", {{"idle_flush_seconds", R"({"type":"number","default":0.5})"}}};
    case route::info: return {"What this server can do: its API, isolation and limits", "", "Info", {}};
    case route::ports:
      return {"The TCP ports on which jobs' processes listen (also those a finished job left running), "
              "each with its job; 503 without cgroup containment", "", "PortList", {}};
    case route::worker_usage: return {"A native scope worker's budget counters", "", "object", {}};
    case route::tail:
      return {"The last bytes of a job's output", "", "JobResult",
              {{"output_limit", R"({"type":"integer","default":16384,"maximum":524288})"}}};
    case route::snapshot_save:
      return {"Stream $HOME as tar+zstd (trailers X-Snapshot-Status, -Sha256, -Bytes)", "SnapshotSaveRequest",
              "application/octet-stream", {}};
    case route::snapshot_restore:
      return {"Extract a tar+zstd stream into $HOME", "application/zstd", "RestoreResult", {}};
    case route::file_read:
      return {"Download a file (one Range: bytes=a-b gives 206); headers X-File-Size, X-File-Mode, Last-Modified",
              "", "application/octet-stream", {{"path", path_schema}}};
    case route::file_write:
      return {"Upload a file: streamed to a temporary file, fsynced, renamed over the target",
              "application/octet-stream", "FileWritten",
              {{"path", path_schema},
               {"mode", R"({"type":"string","pattern":"^[0-7]{3,4}$","description":"default: an existing file's mode, else 0644"})"},
               {"parents", R"({"type":"boolean","default":false})"}}};
    case route::file_stat:
      return {"lstat a path (a symlink is reported, not followed)", "", "FileStat", {{"path", path_schema}}};
    case route::file_list:
      return {"List a directory, sorted by name (bytewise)", "", "FileList",
              {{"path", path_schema}, {"limit", R"({"type":"integer","default":1000,"maximum":10000})"}}};
    case route::file_mkdir: return {"Create a directory", "MkdirRequest", "FilePath", {}};
    case route::file_delete:
      return {"Delete a file, a symlink or a directory (recursive: the whole tree, never following a symlink)", "",
              "FileDeleted", {{"path", path_schema}, {"recursive", R"({"type":"boolean","default":false})"}}};
    case route::file_move: return {"Rename (renameat2; overwrite=false refuses an existing target)", "MoveRequest", "FilePath", {}};
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
                "\",\"in\":\"query\",\"required\":" +
                (std::string(name) == "path" ? "true" : "false") + ",\"schema\":" + schema + "}";
    if (e.id == route::run)
      params += std::string(params.empty() ? "" : ",") +
                R"({"name":"Idempotency-Key","in":"header","required":false,)"
                R"("description":"1-255 printable ASCII characters. A repeat with the same key and the same )"
                R"(script, cwd, env, mode and terminal answers for the job the first request started (a )"
                R"(wait from offset 0 with the repeat's timeout, output_limit and other wait fields), never )"
                R"(starting a second; the same key with other job fields is 422 validation_error. A key )"
                R"(lives as long as its job.","schema":{"type":"string","minLength":1,"maxLength":255}})";
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
