#include "actors/protocol/domain.hpp"

namespace shellctl::actors {
namespace {

struct errc_entry {
  job_errc code;
  int status;
  std::string_view text;
};

// The one table from meaning to the API's status and code (docs/api.md "Errors").
constexpr errc_entry errc_table[] = {
    {job_errc::invalid_request, 400, "invalid_request"},
    {job_errc::validation_error, 422, "validation_error"},
    {job_errc::invalid_cwd, 400, "invalid_cwd"},
    {job_errc::invalid_offset, 400, "invalid_offset"},
    {job_errc::job_not_found, 404, "job_not_found"},
    {job_errc::job_running, 409, "job_running"},
    {job_errc::job_not_running, 409, "job_not_running"},
    {job_errc::input_unsupported, 409, "input_unsupported"},
    {job_errc::resize_unsupported, 409, "resize_unsupported"},
    {job_errc::tmux_target_missing, 409, "tmux_target_missing"},
    {job_errc::tmux_input_failed, 500, "tmux_input_failed"},
    {job_errc::job_id_collision, 500, "job_id_collision"},
    {job_errc::tmux_unavailable, 503, "tmux_unavailable"},
    {job_errc::storage_unavailable, 503, "storage_unavailable"},
    {job_errc::unavailable, 503, "unavailable"},
    {job_errc::snapshot_busy, 409, "snapshot_busy"},
    {job_errc::home_unavailable, 500, "home_unavailable"},
    {job_errc::snapshot_failed, 500, "snapshot_failed"},
    {job_errc::archive_malformed, 400, "archive_malformed"},
    {job_errc::restore_failed, 500, "restore_failed"},
    {job_errc::invalid_path, 400, "invalid_path"},
    {job_errc::path_denied, 403, "path_denied"},
    {job_errc::file_not_found, 404, "file_not_found"},
    {job_errc::not_a_directory, 409, "not_a_directory"},
    {job_errc::is_a_directory, 409, "is_a_directory"},
    {job_errc::file_exists, 409, "file_exists"},
    {job_errc::directory_not_empty, 409, "directory_not_empty"},
    {job_errc::range_not_satisfiable, 416, "range_not_satisfiable"},
    {job_errc::file_io_failed, 500, "file_io_failed"},
    {job_errc::job_capacity_exhausted, 409, "job_capacity_exhausted"},
    {job_errc::input_budget_exhausted, 409, "input_budget_exhausted"},
    {job_errc::internal_error, 500, "internal_error"},
};

const errc_entry& entry(job_errc code) {
  for (auto& e : errc_table)
    if (e.code == code) return e;
  return errc_table[std::size(errc_table) - 1];
}

}  // namespace

caf::error make_job_error(job_errc code, std::string text) {
  return caf::error(static_cast<std::uint8_t>(code), error_category,
                    caf::make_message(std::move(text)));
}

bool is_job_error(const caf::error& e, job_errc code) {
  return e.category() == error_category && e.code() == static_cast<std::uint8_t>(code);
}

std::string error_text(const caf::error& e) {
  // Ours carry their text first (a tmux error also the output of the lines that ran).
  if (e.category() != caf::atom("system") && e.context().size() > 0 && e.context().match_element<std::string>(0))
    return e.context().get_as<std::string>(0);
  return caf::to_string(e);
}

job_error_view read_job_error(const caf::error& e) {
  if (e.category() == error_category) {
    std::string text;
    if (e.context().match_elements<std::string>()) text = e.context().get_as<std::string>(0);
    for (auto& entry : errc_table)
      if (static_cast<std::uint8_t>(entry.code) == e.code()) return {entry.code, std::move(text)};
  }
  if (e.category() == caf::atom("system") &&
      e.code() == static_cast<std::uint8_t>(caf::sec::request_timeout))
    return {job_errc::unavailable, "the server did not answer in time"};
  return {job_errc::internal_error, "request was dropped without an answer (" + caf::to_string(e) + ")"};
}

std::string_view code_text(job_errc code) { return entry(code).text; }
int http_status(job_errc code) { return entry(code).status; }

}  // namespace shellctl::actors
