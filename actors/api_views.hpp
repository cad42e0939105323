#pragma once
// Domain answers → HTTP: the JSON bodies of the API (http-api.md §4) with their exact
// field sets and order (decision D3 for exit codes), and job_errc errors as the API's
// status and error body. Pure functions, used by the api_edge actor and the front.
#include <cstdint>
#include <string>
#include <string_view>

#include "actors/domain.hpp"
#include "io/http/server.hpp"

namespace shellctl::actors {

std::string job_result_json(const job_result& r);
std::string job_status_json(const job_status_view& v);
std::string job_list_json(const job_list& list);
std::string job_deleted_json(const job_deleted& d);
// {"entries":N,"bytes_written":M} (snapshot.md §5.5).
std::string snapshot_restored_json(const snapshot_restored& r);
// The trailers that say a save succeeded (snapshot.md §4.7: a pinned wire contract).
std::vector<io::http::header> snapshot_trailers(const snapshot_saved& s);

io::http::response json_response(int status, std::string body);
io::http::response error_response(int status, std::string_view code, std::string_view message);
io::http::response error_response(const job_error_view& e);

}  // namespace shellctl::actors
