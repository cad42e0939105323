// The scope service's refusals: the one table from meaning to code and status
// (docs/native-scopes.md "The scope service").
#include "actors/native/interfaces.hpp"

namespace shellctl::actors {
namespace {

struct native_entry {
  native_errc code;
  int status;
  std::string_view text;
};

constexpr native_entry native_table[] = {
    {native_errc::scope_generation_required, 400, "scope_generation_required"},
    {native_errc::scope_token_required, 401, "scope_token_required"},
    {native_errc::scope_token_invalid, 403, "scope_token_invalid"},
    {native_errc::scope_not_found, 404, "scope_not_found"},
    {native_errc::scope_exists, 409, "scope_exists"},
    {native_errc::scope_generation_stale, 409, "scope_generation_stale"},
    {native_errc::scope_generation_mismatch, 409, "scope_generation_mismatch"},
    {native_errc::scope_not_ready, 409, "scope_not_ready"},
    {native_errc::scope_worker_lost, 409, "scope_worker_lost"},
    {native_errc::scope_quarantined, 409, "scope_quarantined"},
    {native_errc::scope_destroyed, 410, "scope_destroyed"},
    {native_errc::capability_digest_mismatch, 412, "capability_digest_mismatch"},
    {native_errc::base_snapshot_ref_invalid, 422, "base_snapshot_ref_invalid"},
    {native_errc::input_file_ref_invalid, 422, "input_file_ref_invalid"},
    {native_errc::network_target_denied, 422, "network_target_denied"},
    {native_errc::scope_cleanup_failed, 500, "scope_cleanup_failed"},
    {native_errc::scope_worker_unreachable, 502, "scope_worker_unreachable"},
    {native_errc::scope_capacity_unavailable, 503, "scope_capacity_unavailable"},
    {native_errc::scope_setup_failed, 503, "scope_setup_failed"},
    {native_errc::storage_unavailable, 503, "storage_unavailable"},
};

const native_entry& entry(native_errc code) {
  for (const auto& e : native_table)
    if (e.code == code) return e;
  return native_table[std::size(native_table) - 1];
}

}  // namespace

caf::error make_native_error(native_errc code, std::string message) {
  return caf::error(static_cast<std::uint8_t>(code), native_error_category, caf::make_message(std::move(message)));
}

bool is_native_error(const caf::error& e, native_errc code) {
  return e.category() == native_error_category && e.code() == static_cast<std::uint8_t>(code);
}

native_error_view read_native_error(const caf::error& e, native_errc otherwise) {
  if (e.category() == native_error_category) {
    std::string text;
    if (e.context().match_elements<std::string>()) text = e.context().get_as<std::string>(0);
    for (const auto& entry : native_table)
      if (static_cast<std::uint8_t>(entry.code) == e.code()) return {entry.code, std::move(text)};
  }
  return {otherwise, caf::to_string(e)};
}

std::string_view native_code_text(native_errc code) { return entry(code).text; }
int native_status(native_errc code) { return entry(code).status; }

}  // namespace shellctl::actors
