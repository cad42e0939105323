#pragma once
// event_log: writes the job lifecycle events and the actors' warnings to stderr, one line
// each (io/log/log_line.hpp: text or JSON). The job actors run on scheduler threads, where
// a write to a stderr pipe that nobody drains must never block; this actor is detached and
// owns those writes. Lines below the configured level are dropped here, so that a sender
// never needs to know the level.
#include "actors/protocol/interfaces.hpp"
#include "io/log/log_line.hpp"

namespace shellctl::actors {

struct event_log_settings {
  io::log::format format = io::log::format::text;
  io::log::level min_level = io::log::level::info;
};

event_log_actor::behavior_type event_log(event_log_actor::pointer self, event_log_settings cfg);

}  // namespace shellctl::actors
