#include "actors/services/event_log.hpp"

namespace shellctl::actors {

event_log_actor::behavior_type event_log(event_log_actor::pointer self, event_log_settings cfg) {
  return {
      [cfg](log_event& e) {
        if (cfg.format == io::log::format::off || e.severity < cfg.min_level) return;
        std::string line;
        io::log::append_line(line, cfg.format, io::log::now_unix_us(), e.severity, e.msg, e.fields);
        io::log::write_stderr(line);
      },
      [self](shutdown_jobs&) { self->quit(); },
  };
}

}  // namespace shellctl::actors
