#pragma once
// The JSON bodies of the API (http-api.md §4): exact field sets and order, decision D3
// for exit codes. Pure functions: actors call them with the state they own.
#include <cstdint>
#include <string>
#include <string_view>

#include "actors/messages.hpp"
#include "io/http/server.hpp"
#include "io/text/output_window.hpp"

namespace shellctl::actors {

std::string job_result_json(const job_row& row, const std::string& output_path,
                            const io::text::output_window& w);
std::string job_status_json(const job_row& row, std::uint64_t offset);
std::string job_list_json(const std::vector<job_info>& jobs);

io::http::response json_response(int status, std::string body);
io::http::response error_response(int status, std::string_view code, std::string_view message);

}  // namespace shellctl::actors
