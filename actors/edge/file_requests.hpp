#pragma once
// The file API at the edge (docs/api.md "Files"): HTTP requests → file requests, file answers →
// HTTP. Pure (no actor, no I/O), so the HTTP fuzzer drives it with arbitrary bytes; the
// file work itself is a file_op's (actors/files/file_op.hpp).
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "actors/protocol/domain.hpp"
#include "actors/protocol/messages.hpp"
#include "actors/protocol/routes.hpp"
#include "io/http/server.hpp"

namespace shellctl::actors {

using decoded_file_request =
    std::variant<job_error_view, file_stat_request, file_list_request, file_mkdir_request,
                 file_delete_request, file_move_request, file_read_request, file_write_request>;

// `route` is one of the file routes. A write's body stays in `req` (the edge hands it on).
decoded_file_request decode_file_request(const io::http::request& req, route r);

// The part of a file a GET sends, from its one `Range: bytes=…` header (RFC 9110, section 14):
// a header that is absent, malformed, multi-range or of another unit is ignored (the whole
// file, 200); a range that starts at or beyond the end is unsatisfiable (416).
struct byte_span {
  enum class kind { whole, partial, unsatisfiable } k = kind::whole;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};
byte_span pick_range(const std::string* range_header, std::uint64_t size);

// The head of a download (200 or 206, sized, with X-File-Size, X-File-Mode, Last-Modified).
io::http::response file_content_head(const file_opened& f, const byte_span& span);
// 416 with `Content-Range: bytes */size`.
io::http::response range_refused(const file_opened& f);

std::string file_stat_json(const file_stat& s);
std::string file_listing_json(const file_listing& l);
std::string file_done_json(const file_done& d);
std::string file_written_json(const file_written& w);

}  // namespace shellctl::actors
