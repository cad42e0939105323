#pragma once
// What a long-poll asks for (run, wait and input share it; actors/jobs/job_actor/long_poll.hpp
// holds the rules that answer it). CAF-free, so the rules are tested without actors.
#include <cstdint>

namespace shellctl::actors {

// Long-poll parameters after defaulting and clamping (docs/api.md "Long-polls", D5).
struct wait_params {
  std::uint64_t offset = 0;
  double timeout_s = 0;
  std::uint64_t limit = 16384;
  double idle_flush_s = 0.5;
  bool return_on_input_wait = false;  // docs/api.md "Prompts"; old clients never send it
};

}  // namespace shellctl::actors
