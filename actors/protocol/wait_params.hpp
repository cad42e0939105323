#pragma once
// What a long-poll asks for (run, wait and input share it; actors/jobs/job_actor/long_poll.hpp
// holds the rules that answer it). CAF-free, so the rules are tested without actors.
#include <cstdint>

namespace shellctl::actors {

// Long-poll parameters after defaulting and clamping (http-api.md §5.2, D5).
struct wait_params {
  std::uint64_t offset = 0;
  double timeout_s = 0;
  std::uint64_t limit = 16384;
  double idle_flush_s = 0.5;
  bool return_on_input_wait = false;  // §E6; old clients never send it
};

}  // namespace shellctl::actors
