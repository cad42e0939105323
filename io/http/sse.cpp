#include "io/http/sse.hpp"

#include "io/json/json.hpp"

namespace shellctl::io::http {
namespace {

using io::json::writer;

std::string one_line(std::string json) {
  while (!json.empty() && json.back() == '\n') json.pop_back();
  return json;
}

std::string sse_frame(std::string_view event, std::uint64_t id, const std::string& data) {
  std::string out;
  out.reserve(data.size() + 48);
  out += "event: ";
  out += event;
  out += "\nid: " + std::to_string(id) + "\ndata: ";
  out += data;
  out += "\n\n";
  return out;
}

}  // namespace

std::string sse_output_event(std::uint64_t offset, std::uint64_t next_offset, std::string_view text) {
  writer w;
  w.begin_object();
  w.key("offset").value(offset);
  w.key("next_offset").value(next_offset);
  w.key("output").value(text);
  w.end_object();
  return sse_frame("output", next_offset, one_line(w.finish()));
}

std::string sse_exit_event(std::string_view job_id, std::string_view status,
                           const std::optional<std::int64_t>& exit_code, std::uint64_t offset) {
  writer w;
  w.begin_object();
  w.key("job_id").value(job_id);
  w.key("status").value(status);
  w.key("done").value(true);
  w.key("exit_code");
  if (exit_code)
    w.value(*exit_code);
  else
    w.null();
  w.key("offset").value(offset);
  w.end_object();
  return sse_frame("exit", offset, one_line(w.finish()));
}

}  // namespace shellctl::io::http
