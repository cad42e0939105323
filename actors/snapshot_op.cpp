#include "actors/snapshot_op.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "io/archive/home_reader.hpp"
#include "io/archive/home_writer.hpp"
#include "io/fs/files.hpp"

namespace shellctl::actors {
namespace {

using clock_type = std::chrono::steady_clock;

// Compressed bytes a save may have handed to the connection and not yet seen written.
constexpr std::uint64_t max_in_flight = 1u << 20;

// snapshot.md §3: $HOME set, stat-able (following symlinks) and a directory; then walked
// through its real path (open point 1: a symlinked Home is saved, not an empty archive).
std::string resolve_home(const std::string& home) {
  if (home.empty()) throw caf::error(make_job_error(job_errc::home_unavailable, "HOME is not set"));
  struct stat st {};
  if (::stat(home.c_str(), &st) != 0)
    throw caf::error(make_job_error(job_errc::home_unavailable,
                                    "stat " + home + ": " + std::strerror(errno)));
  if (!S_ISDIR(st.st_mode))
    throw caf::error(make_job_error(job_errc::home_unavailable, home + " is not a directory"));
  return io::fs::canonical_or(home);
}

clock_type::duration left(clock_type::time_point deadline) {
  return std::max(deadline - clock_type::now(), clock_type::duration::zero());
}

snapshot_saved save(caf::blocking_actor* self, const std::string& home,
                    clock_type::time_point deadline, snapshot_save_request& req) {
  const io::http::responder out = req.out;
  caf::actor me = caf::actor_cast<caf::actor>(self);
  bool started = false;
  bool gone = false;
  std::uint64_t sent = 0;
  // The client stopped reading or the deadline passed: the save ends (and is cut).
  auto wait_for_room = [&]() -> bool {
    while (sent - out.stream_acked() > max_in_flight) {
      if (!out.connected()) return false;
      bool timed_out = false;
      self->receive([](stream_drained&) {},
                    caf::after(left(deadline)) >> [&] { timed_out = true; });
      if (timed_out) return false;
    }
    // Wake-ups that came while nothing waited: one is taken per chunk, so they never pile up.
    self->receive([](stream_drained&) {}, caf::after(std::chrono::seconds(0)) >> [] {});
    return true;
  };
  auto sink = [&](std::string_view chunk) -> bool {
    if (!started) {
      // The head goes with the first byte, so an early failure is still a plain 500.
      io::http::response head;
      head.headers.push_back({"Content-Type", "application/octet-stream"});
      head.headers.push_back({"Trailer", "X-Snapshot-Status, X-Snapshot-Sha256, X-Snapshot-Bytes"});
      out.start_stream(std::move(head), [me] { caf::anon_send(me, stream_drained{}); });
      started = true;
    }
    if (!out.connected()) {
      gone = true;
      return false;
    }
    out.send_chunk(std::string(chunk));
    sent += chunk.size();
    if (!wait_for_room()) {
      gone = true;
      return false;
    }
    return true;
  };
  auto stop = [&] { return clock_type::now() >= deadline || (started && !out.connected()); };
  io::archive::snapshot_excludes excludes(req.excludes);
  auto r = io::archive::write_home_archive(home, excludes, sink, stop);
  snapshot_saved saved;
  saved.started = started;
  saved.bytes = r.bytes;
  if (r.ok) {
    saved.ok = true;
    saved.sha256_hex = r.sha256_hex;
    return saved;
  }
  saved.error = gone && clock_type::now() >= deadline ? "snapshot timeout reached" : r.error;
  if (!started) throw caf::error(make_job_error(job_errc::snapshot_failed, saved.error));
  return saved;
}

// The request body as the restore reads it: pieces asked of the connection one at a time.
class body_source : public io::archive::byte_source {
 public:
  body_source(caf::blocking_actor* self, snapshot_restore_request& req,
              clock_type::time_point deadline)
      : self_(self), req_(req), deadline_(deadline) {
    if (!req.streamed) {
      held_ = std::move(req.body);
      ended_ = true;
    }
  }

  std::ptrdiff_t read(char* buf, std::size_t cap) override {
    while (pos_ == held_.size()) {
      if (ended_) return 0;
      if (!failure_.empty()) return -1;
      ask();
    }
    const std::size_t n = std::min(cap, held_.size() - pos_);
    std::memcpy(buf, held_.data() + pos_, n);
    pos_ += n;
    return static_cast<std::ptrdiff_t>(n);
  }
  std::string failure() const override { return failure_; }

 private:
  void ask() {
    if (!asked_once_) {
      caf::actor me = caf::actor_cast<caf::actor>(self_);
      req_.in.read_body([me](io::http::body_piece p) { caf::anon_send(me, body_arrived{std::move(p)}); });
      asked_once_ = true;
    } else {
      req_.in.more_body();
    }
    bool timed_out = false;
    self_->receive(
        [&](body_arrived& m) {
          held_ = std::move(m.piece.data);
          pos_ = 0;
          if (m.piece.end) ended_ = true;
          if (m.piece.failed) failure_ = m.piece.error;
        },
        caf::after(left(deadline_)) >> [&] { timed_out = true; });
    if (timed_out) failure_ = "read deadline exceeded: the snapshot timeout was reached";
  }

  caf::blocking_actor* self_;
  snapshot_restore_request& req_;
  clock_type::time_point deadline_;
  std::string held_;
  std::size_t pos_ = 0;
  bool ended_ = false;
  bool asked_once_ = false;
  std::string failure_;
};

snapshot_restored restore(caf::blocking_actor* self, const std::string& home,
                          clock_type::time_point deadline, snapshot_restore_request& req) {
  body_source body(self, req, deadline);
  auto stop = [&] { return clock_type::now() >= deadline; };
  auto r = io::archive::restore_home(home, body, stop);
  using outcome = io::archive::restore_result::outcome;
  switch (r.result) {
    case outcome::ok:
      return snapshot_restored{r.entries, r.bytes_written};
    case outcome::malformed:
      throw caf::error(make_job_error(job_errc::archive_malformed, r.message));
    case outcome::failed:
      break;
  }
  throw caf::error(make_job_error(job_errc::restore_failed, r.message));
}

// The operation's answer: its value, its domain error, or `otherwise` for anything thrown.
template <class F>
auto answered(job_errc otherwise, F run) -> caf::result<decltype(run())> {
  try {
    return run();
  } catch (caf::error& e) {
    return std::move(e);
  } catch (const std::exception& e) {
    return make_job_error(otherwise, e.what());
  }
}

}  // namespace

void snapshot_op(caf::blocking_actor* self, snapshot_settings cfg) {
  const auto deadline =
      clock_type::now() + std::chrono::duration_cast<clock_type::duration>(cfg.timeout);
  // One request, answered, and the operation is over.
  self->receive(
      [&](snapshot_save_request& req) -> caf::result<snapshot_saved> {
        return answered(job_errc::snapshot_failed, [&] {
          return save(self, resolve_home(cfg.home), deadline, req);
        });
      },
      [&](snapshot_restore_request& req) -> caf::result<snapshot_restored> {
        return answered(job_errc::restore_failed, [&] {
          return restore(self, resolve_home(cfg.home), deadline, req);
        });
      });
}

}  // namespace shellctl::actors
