#include "actors/snapshot/snapshot_op.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "io/fs/files.hpp"
#include "io/fs/sha256.hpp"
#include "io/home/frames.hpp"
#include "io/home/spawn.hpp"
#include "io/home/state_identity.hpp"
#include "io/home/wire.hpp"

namespace shellctl::actors {
namespace {

using clock_type = std::chrono::steady_clock;

// Compressed bytes a save may have handed to the connection and not yet seen written: a
// few chunks, so that reading the helper's pipe and writing the socket overlap.
constexpr std::uint64_t max_in_flight = 4u << 20;
// Bytes read from the helper at a time (its pipe holds 1 MiB): one chunk of the stream.
constexpr std::size_t read_bytes = 1u << 20;
// How often a wait on the helper looks at the client and the deadline.
constexpr int look_ms = 200;

// docs/api.md "Home snapshots": $HOME set, stat-able (following symlinks) and a directory;
// then walked through its real path (unlike the original, a symlinked Home is saved, not an
// empty archive).
// The server only looks at the path it was given (stat, realpath): everything below it is
// the confined helper's.
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

int poll_ms(clock_type::time_point deadline) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(left(deadline)).count();
  return static_cast<int>(std::min<std::int64_t>(ms, look_ms));
}

// One run of shellctl-home: started with the role's arguments, killed (with its confined
// process) and reaped whatever happens, so no path of this op leaves it behind.
class confined_helper {
 public:
  confined_helper(const home_helper_settings& cfg, const std::string& role, const std::string& home,
                  io::home::data_pipe pipe, job_errc failure)
      : failure_(failure) {
    std::vector<std::string> args{role, "--home", home};
    args.insert(args.end(), cfg.args.begin(), cfg.args.end());
    std::string err;
    if (!io::home::start_helper(cfg.binary, args, pipe, p_, err))
      throw caf::error(make_job_error(failure, "start the confined helper: " + err));
  }
  ~confined_helper() {
    io::home::kill_helper(p_);
    io::home::reap_helper(p_);
  }
  confined_helper(const confined_helper&) = delete;
  confined_helper& operator=(const confined_helper&) = delete;

  int control() const { return p_.control; }
  int data() const { return p_.data; }
  void close_data() {
    if (p_.data >= 0) ::close(p_.data);
    p_.data = -1;
  }

  void send(const io::home::request& req, clock_type::time_point deadline) {
    // A helper that failed to start answers anyway (its reply says why): a lost request is
    // not an error of its own.
    io::home::send_frame(p_.control, io::home::encode(req), -1, deadline);
  }

  // The helper's reply; a helper that ends (or is stopped) without one is the machine's
  // failure, said with how it ended.
  io::home::reply answer(clock_type::time_point deadline) {
    std::string payload;
    const auto r = io::home::recv_frame(p_.control, payload, nullptr, deadline);
    if (r == io::home::recv_result::frame) {
      if (auto rep = io::home::decode_reply(payload)) return *rep;
      throw caf::error(make_job_error(failure_, "the confined helper's answer is malformed"));
    }
    if (r == io::home::recv_result::timeout)
      throw caf::error(make_job_error(failure_, "snapshot timeout reached"));
    io::home::kill_helper(p_);
    const int status = io::home::reap_helper(p_);
    throw caf::error(make_job_error(failure_, "the confined helper ended without an answer (" +
                                                  io::home::describe_status(status) + ")"));
  }

 private:
  io::home::helper_process p_;
  job_errc failure_;
};

snapshot_saved save(caf::blocking_actor* self, const snapshot_settings& cfg, const std::string& home,
                    clock_type::time_point deadline, snapshot_save_request& req) {
  const io::http::responder out = req.out;
  caf::actor me = caf::actor_cast<caf::actor>(self);
  io::home::request ask;
  ask.kind = io::home::op::save;
  ask.excludes = req.excludes;
  ask.skip = io::home::linked_state_files(cfg.helper.state_dir);
  confined_helper helper(cfg.helper, "save", home, io::home::data_pipe::from_helper,
                         job_errc::snapshot_failed);
  helper.send(ask, deadline);

  bool started = false;
  std::uint64_t sent = 0;
  io::fs::sha256 digest;
  std::string why;  // the save was cut: the client went away, or the deadline passed
  auto gone = [&] { return started && !out.connected(); };
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
  auto send_chunk = [&](std::string chunk) -> bool {
    if (!started) {
      // The head goes with the first byte, so an early failure is still a plain 500.
      io::http::response head;
      head.headers.push_back({"Content-Type", "application/octet-stream"});
      head.headers.push_back({"Trailer", "X-Snapshot-Status, X-Snapshot-Sha256, X-Snapshot-Bytes"});
      out.start_stream(std::move(head), [me] { caf::anon_send(me, stream_drained{}); });
      started = true;
    }
    if (!out.connected()) return false;
    digest.update(chunk);
    sent += chunk.size();
    out.send_chunk(std::move(chunk));
    return wait_for_room();
  };
  // The archive as the helper writes it, chunk by chunk, until its end (EOF).
  for (;;) {
    if (clock_type::now() >= deadline) {
      why = "snapshot timeout reached";
      break;
    }
    if (gone()) {
      why = "the client stopped reading";
      break;
    }
    pollfd p{helper.data(), POLLIN, 0};
    const int n = ::poll(&p, 1, poll_ms(deadline));
    if (n < 0 && errno != EINTR) {
      why = std::string("poll: ") + std::strerror(errno);
      break;
    }
    if (n <= 0) continue;
    std::string chunk(read_bytes, '\0');
    const ssize_t got = ::read(helper.data(), chunk.data(), chunk.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      why = std::string("read the archive: ") + std::strerror(errno);
      break;
    }
    if (got == 0) break;  // the archive is complete (or the helper ended): its reply says
    chunk.resize(static_cast<std::size_t>(got));
    if (!send_chunk(std::move(chunk))) {
      why = clock_type::now() >= deadline ? "snapshot timeout reached" : "the client stopped reading";
      break;
    }
  }
  if (why.empty()) {
    const auto rep = helper.answer(deadline);
    if (rep.st == io::home::status::ok) return snapshot_saved{sent, digest.hex()};
    why = rep.message.empty() ? "the save failed" : rep.message;
  }
  // Before the first byte the client hears it; after it the edge can only cut the stream.
  throw caf::error(make_job_error(job_errc::snapshot_failed, why));
}

// The request body as the restore reads it: pieces asked of the connection one at a time.
class body_source {
 public:
  body_source(caf::blocking_actor* self, snapshot_restore_request& req,
              clock_type::time_point deadline)
      : self_(self), req_(req), deadline_(deadline) {
    if (!req.streamed) {
      held_ = std::move(req.body);
      ended_ = true;
    }
  }

  // The next piece (empty at the end, with ended() true), or nullopt with failure().
  std::optional<std::string> next() {
    if (!held_.empty()) return std::exchange(held_, std::string());
    if (ended_) return std::string();
    if (!failure_.empty()) return std::nullopt;
    ask();
    if (!failure_.empty()) return std::nullopt;
    return std::exchange(held_, std::string());
  }
  bool ended() const { return ended_ && held_.empty(); }
  const std::string& failure() const { return failure_; }

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
  bool ended_ = false;
  bool asked_once_ = false;
  std::string failure_;
};

// Writes all of `bytes` into the helper's pipe, unless the helper answers first (it stopped
// reading: an archive it refused, or a failure) or the deadline passes. "" when all went.
std::string feed(confined_helper& helper, std::string_view bytes, clock_type::time_point deadline) {
  while (!bytes.empty()) {
    if (clock_type::now() >= deadline) return "snapshot timeout reached";
    pollfd p[2] = {{helper.data(), POLLOUT, 0}, {helper.control(), POLLIN, 0}};
    const int n = ::poll(p, 2, poll_ms(deadline));
    if (n < 0 && errno != EINTR) return std::string("poll: ") + std::strerror(errno);
    if (n <= 0) continue;
    if (p[1].revents != 0) return "answered";
    const ssize_t w = ::write(helper.data(), bytes.data(), bytes.size());
    if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (w < 0) return errno == EPIPE ? "answered" : std::string("write the archive: ") + std::strerror(errno);
    bytes.remove_prefix(static_cast<std::size_t>(w));
  }
  return {};
}

snapshot_restored restore(caf::blocking_actor* self, const snapshot_settings& cfg,
                          const std::string& home, clock_type::time_point deadline,
                          snapshot_restore_request& req) {
  body_source body(self, req, deadline);
  io::home::request ask;
  ask.kind = io::home::op::restore;
  ask.skip = io::home::linked_state_files(cfg.helper.state_dir);
  confined_helper helper(cfg.helper, "restore", home, io::home::data_pipe::to_helper,
                         job_errc::restore_failed);
  helper.send(ask, deadline);
  for (;;) {
    auto piece = body.next();
    if (!piece)
      // The client went away or stopped sending: the helper is killed with what it had.
      throw caf::error(make_job_error(job_errc::restore_failed, body.failure()));
    const std::string why = feed(helper, *piece, deadline);
    if (why == "answered") break;
    if (!why.empty()) throw caf::error(make_job_error(job_errc::restore_failed, why));
    if (body.ended()) break;
  }
  helper.close_data();  // the end of the archive
  const auto rep = helper.answer(deadline);
  switch (rep.st) {
    case io::home::status::ok:
      return snapshot_restored{static_cast<std::int64_t>(rep.count), static_cast<std::int64_t>(rep.bytes)};
    case io::home::status::malformed:
      throw caf::error(make_job_error(job_errc::archive_malformed, rep.message));
    default:
      break;
  }
  throw caf::error(make_job_error(job_errc::restore_failed, rep.message));
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
          return save(self, cfg, resolve_home(cfg.home), deadline, req);
        });
      },
      [&](snapshot_restore_request& req) -> caf::result<snapshot_restored> {
        return answered(job_errc::restore_failed, [&] {
          return restore(self, cfg, resolve_home(cfg.home), deadline, req);
        });
      });
}

}  // namespace shellctl::actors
