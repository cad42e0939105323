#include "io/fs/job_dir.hpp"

#include <unistd.h>

#include <charconv>

#include "io/fs/files.hpp"

namespace shellctl::io::fs {
namespace {

std::string trim(std::string s) {
  auto ws = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!s.empty() && ws(s.back())) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && ws(s[i])) ++i;
  return s.substr(i);
}

}  // namespace

std::string job_dir::file(std::string_view name) const { return join(path_, std::string(name)); }

bool job_dir::has(const char* name) const { return exists(file(name)); }

void job_dir::write_inputs(std::string_view script, std::string_view env_json,
                           const std::string& output_log) const {
  write_file(file(job_files::script), script, 0600);
  write_file(file(job_files::env), env_json, 0600);
  write_file(output_log, "", 0600);
}

void job_dir::open_gate() const { write_file(file(job_files::start_gate), "", 0600); }

exit_record job_dir::read_exit_record() const {
  exit_record a;
  std::string code, ended;
  a.unreadable = read_small_file_checked(file(job_files::exit_code), code) == read_result::error ||
                 read_small_file_checked(file(job_files::ended_at), ended) == read_result::error;
  code = trim(code);
  ended = trim(ended);
  a.code_file = !code.empty();
  a.ended_file = !ended.empty();
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(code.data(), code.data() + code.size(), v);
  if (a.code_file && ec == std::errc() && p == code.data() + code.size()) a.code = v;
  a.ended_at = ended;
  return a;
}

void job_dir::mark_pipe_failed() const { write_file(file(job_files::pipe_failed), "", 0644); }

void job_dir::forget(const char* name) const { ::unlink(file(name).c_str()); }

}  // namespace shellctl::io::fs
