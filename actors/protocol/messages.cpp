#include "actors/protocol/messages.hpp"

namespace shellctl::actors {

caf::error make_tmux_error(tmux_errc code, std::string text, tmux_output ran) {
  return caf::error(static_cast<std::uint8_t>(code), tmux_error_category,
                    caf::make_message(std::move(text), std::move(ran)));
}

bool is_tmux_error(const caf::error& e, tmux_errc code) {
  return e.category() == tmux_error_category && e.code() == static_cast<std::uint8_t>(code);
}

tmux_output output_before(const caf::error& e) {
  if (e.category() != tmux_error_category || !e.context().match_elements<std::string, tmux_output>()) return {};
  return e.context().get_as<tmux_output>(1);
}

}  // namespace shellctl::actors
