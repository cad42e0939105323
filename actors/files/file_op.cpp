#include "actors/files/file_op.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <cerrno>
#include <cstring>

#include "io/fs/files.hpp"
#include "io/fs/sha256.hpp"
#include "io/home/frames.hpp"
#include "io/home/wire.hpp"

namespace shellctl::actors {
namespace {

using clock_type = std::chrono::steady_clock;
using io::fs::file_errc;

// How long a channel may take to be handed out, and the worker to answer one request (a
// recursive delete of a large tree is the slowest): past it the request fails, and the
// channel (with whatever the worker still does) is dropped.
constexpr auto channel_bound = std::chrono::seconds(30);
constexpr auto answer_bound = std::chrono::seconds(120);

job_errc errc_of(file_errc c) {
  switch (c) {
    case file_errc::invalid_path: return job_errc::invalid_path;
    case file_errc::denied: return job_errc::path_denied;
    case file_errc::not_found: return job_errc::file_not_found;
    case file_errc::not_a_directory: return job_errc::not_a_directory;
    case file_errc::is_a_directory: return job_errc::is_a_directory;
    case file_errc::exists: return job_errc::file_exists;
    case file_errc::not_empty: return job_errc::directory_not_empty;
    case file_errc::io: break;
  }
  return job_errc::file_io_failed;
}

[[noreturn]] void fail(job_errc c, const std::string& message) { throw caf::error(make_job_error(c, message)); }

// The operation's answer: its value, or the domain error of what it threw.
template <class F>
auto answered(F run) -> caf::result<decltype(run())> {
  try {
    return run();
  } catch (caf::error& e) {
    return std::move(e);
  } catch (const std::exception& e) {
    return make_job_error(job_errc::file_io_failed, e.what());
  }
}

// One conversation with the confined file worker.
class worker_channel {
 public:
  worker_channel(caf::blocking_actor* self, const file_settings& cfg) {
    self->request(cfg.worker, channel_bound, file_channel_request{})
        .receive([&](file_channel& ch) { socket_ = std::move(ch.socket); },
                 [&](caf::error& e) { error_ = std::move(e); });
    if (error_) throw caf::error(std::move(error_));
    if (!socket_ || !*socket_) fail(job_errc::file_io_failed, "the confined file worker gave no channel");
  }

  // Sends `req` and returns the worker's reply (an error reply is thrown as its domain
  // error); the descriptor that came with it, if any, goes to `fd`.
  io::home::reply ask(const io::home::request& req, io::fs::unique_fd* fd = nullptr) {
    const auto until = clock_type::now() + answer_bound;
    if (!io::home::send_frame(socket_->get(), io::home::encode(req), -1, until))
      fail(job_errc::file_io_failed, std::string("the confined file worker: ") + std::strerror(errno));
    std::string payload;
    int passed = -1;
    const auto r = io::home::recv_frame(socket_->get(), payload, &passed, until);
    io::fs::unique_fd held(passed);
    if (r != io::home::recv_result::frame)
      fail(job_errc::file_io_failed, r == io::home::recv_result::timeout
                                         ? "the confined file worker did not answer in time"
                                         : "the confined file worker went away");
    auto rep = io::home::decode_reply(payload);
    if (!rep) fail(job_errc::file_io_failed, "the confined file worker's answer is malformed");
    if (rep->st != io::home::status::ok) {
      if (rep->st == io::home::status::malformed || rep->st == io::home::status::failed)
        fail(job_errc::file_io_failed, rep->message);
      fail(errc_of(io::home::file_errc_of(rep->st)), rep->message);
    }
    if (fd != nullptr) *fd = std::move(held);
    return std::move(*rep);
  }

 private:
  std::shared_ptr<io::fs::unique_fd> socket_;
  caf::error error_;
};

io::home::request make(io::home::op kind, std::string path) {
  io::home::request r;
  r.kind = kind;
  r.path = std::move(path);
  return r;
}

// The worker is confined like a job, so what it hands over is checked like input: a
// download's descriptor must be a regular file open for reading, an upload's a regular
// file open for writing.
void check_passed(const io::fs::unique_fd& fd, bool for_writing) {
  struct stat st {};
  const int flags = fd ? ::fcntl(fd.get(), F_GETFL) : -1;
  const int mode = flags & O_ACCMODE;
  const bool ok = fd && ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && flags >= 0 &&
                  (for_writing ? (mode == O_WRONLY || mode == O_RDWR) : (mode == O_RDONLY || mode == O_RDWR));
  if (!ok) fail(job_errc::file_io_failed, "the confined file worker handed over something other than a file");
}

// Sends [offset, offset + length) of the open file into the connection's socket, lent by
// the loop once the head is written: sendfile, so the bytes go from the page cache to the
// socket without crossing user space (a page-cache miss blocks this op's own thread, never
// the loop). The socket is non-blocking: a full send buffer waits in poll, for `idle` at
// most. The end is clean only when every byte went: a file cut short meanwhile, a reader
// that went away or stalled, or an error end the connection (its Content-Length unmet).
void send_range(caf::blocking_actor* self, const file_settings& cfg, int file, const file_send& s) {
  const io::http::responder& out = s.out;
  std::shared_ptr<io::fs::unique_fd> sock;
  bool waited_out = false;
  self->receive([&](socket_lent& m) { sock = std::move(m.socket); },
                caf::after(cfg.idle) >> [&] { waited_out = true; });
  if (waited_out || !sock || !*sock) return out.return_socket(0);  // HEAD, or nobody to send to
  std::uint64_t sent = 0;
  off_t offset = static_cast<off_t>(s.offset);
  auto last_progress = clock_type::now();
  while (sent < s.length && out.connected()) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(s.length - sent, 16u << 20));
    const ssize_t n = ::sendfile(sock->get(), file, &offset, want);
    if (n > 0) {
      sent += static_cast<std::uint64_t>(n);
      last_progress = clock_type::now();
      continue;
    }
    if (n == 0) break;  // the file shrank under us
    if (errno == EINTR) continue;
    if (errno != EAGAIN) break;  // the peer went away (EPIPE), or the socket was shut down
    if (clock_type::now() - last_progress >= cfg.idle) break;  // a reader that stopped reading
    pollfd p{sock->get(), POLLOUT, 0};
    ::poll(&p, 1, 1000);
  }
  out.return_socket(sent);
}

// The upload's body, piece by piece as it arrives, into the worker's temporary file. The
// SHA-256 runs on a thread of its own beside the writes: it costs more than the write
// itself (~1.2 GB/s with the CPU's SHA instructions, measured here), and the two together
// on one thread were the upload's bottleneck (bench/files_bench.py). Writeback starts
// every few MiB (sync_file_range), so that the fsync at the end has little left to do.
class upload_sink {
 public:
  upload_sink(int fd, std::string path) : fd_(fd), path_(std::move(path)), hasher_([this] { hash_loop(); }) {}
  ~upload_sink() { stop_hasher(); }
  upload_sink(const upload_sink&) = delete;
  upload_sink& operator=(const upload_sink&) = delete;

  void write(std::string data) {
    if (data.empty()) return;
    if (!io::fs::write_all(fd_, data.data(), data.size()))
      fail(job_errc::file_io_failed, "upload " + path_ + ": " + std::strerror(errno));
    size_ += data.size();
    if (size_ - synced_ >= writeback_bytes) {
      ::sync_file_range(fd_, static_cast<off_t>(synced_), static_cast<off_t>(size_ - synced_),
                        SYNC_FILE_RANGE_WRITE);
      synced_ = size_;
    }
    std::unique_lock<std::mutex> lk(mu_);
    room_.wait(lk, [&] { return queued_ < max_queued; });
    queued_ += data.size();
    pieces_.push_back(std::move(data));
    ready_.notify_one();
  }
  std::uint64_t size() const { return size_; }
  std::string sha256_hex() {
    stop_hasher();
    return digest_.hex();
  }

 private:
  static constexpr std::size_t max_queued = 4u << 20;  // bytes written, not yet hashed
  static constexpr std::uint64_t writeback_bytes = 8u << 20;

  void hash_loop() {
    for (;;) {
      std::string piece;
      {
        std::unique_lock<std::mutex> lk(mu_);
        ready_.wait(lk, [&] { return !pieces_.empty() || done_; });
        if (pieces_.empty()) return;
        piece = std::move(pieces_.front());
        pieces_.pop_front();
      }
      digest_.update(piece);
      std::lock_guard<std::mutex> lk(mu_);
      queued_ -= piece.size();
      room_.notify_one();
    }
  }
  void stop_hasher() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      done_ = true;
    }
    ready_.notify_one();
    if (hasher_.joinable()) hasher_.join();
  }

  int fd_;
  std::string path_;
  io::fs::sha256 digest_;
  std::uint64_t size_ = 0;
  std::uint64_t synced_ = 0;
  std::mutex mu_;
  std::condition_variable ready_, room_;
  std::deque<std::string> pieces_;
  std::size_t queued_ = 0;
  bool done_ = false;
  std::thread hasher_;  // last: it starts once everything above exists
};

void receive_body(caf::blocking_actor* self, const file_settings& cfg, file_write_request& req,
                  upload_sink& up) {
  if (!req.streamed) {
    up.write(std::move(req.body));
    return;
  }
  caf::actor me = caf::actor_cast<caf::actor>(self);
  req.in.read_body([me](io::http::body_piece p) { caf::anon_send(me, body_arrived{std::move(p)}); });
  for (;;) {
    io::http::body_piece piece;
    bool idle = false;
    self->receive([&](body_arrived& m) { piece = std::move(m.piece); },
                  caf::after(cfg.idle) >> [&] { idle = true; });
    if (idle) fail(job_errc::invalid_request, "the upload's body stopped arriving; the old file is kept");
    if (piece.failed)
      fail(job_errc::invalid_request, "the upload's body was cut (" + piece.error + "); the old file is kept");
    // The next piece is asked for before this one is written: the connection reads it
    // while the disk writes (one piece held here, at most one window buffered there).
    if (!piece.end) req.in.more_body();
    if (!piece.data.empty()) up.write(std::move(piece.data));
    if (piece.end) return;
  }
}

file_written upload(caf::blocking_actor* self, const file_settings& cfg, file_write_request& r) {
  worker_channel ch(self, cfg);
  auto ask = make(io::home::op::open_write, r.path);
  ask.mode = r.mode;
  ask.flag = r.parents;
  io::fs::unique_fd temp;
  const auto opened = ch.ask(ask, &temp);
  check_passed(temp, true);
  upload_sink sink(temp.get(), opened.path);
  try {
    receive_body(self, cfg, r, sink);
  } catch (...) {
    // The temporary file goes before the answer: its space is free when the client hears
    // of the failure (a full disk stays full otherwise until the worker notices).
    temp.reset();
    try {
      ch.ask(make(io::home::op::discard, r.path));
    } catch (...) {
    }
    throw;
  }
  temp.reset();  // the worker syncs and renames its own descriptor of the same file
  const auto done = ch.ask(make(io::home::op::commit, r.path));
  if (done.meta.size != sink.size())
    fail(job_errc::file_io_failed, "upload " + opened.path + ": the file holds " +
                                       std::to_string(done.meta.size) + " bytes, " +
                                       std::to_string(sink.size()) + " were sent");
  return file_written{done.path, sink.size(), sink.sha256_hex()};
}

}  // namespace

void file_op(caf::blocking_actor* self, file_settings cfg) {
  io::fs::unique_fd reading;  // a download's open file
  // One request, answered; a download then waits for the edge's go-ahead.
  self->receive(
      [&](file_stat_request& r) -> caf::result<file_stat> {
        return answered([&] {
          const auto rep = worker_channel(self, cfg).ask(make(io::home::op::stat, r.path));
          return file_stat{rep.path, rep.meta};
        });
      },
      [&](file_list_request& r) -> caf::result<file_listing> {
        return answered([&] {
          auto ask = make(io::home::op::list, r.path);
          ask.limit = r.limit;
          auto rep = worker_channel(self, cfg).ask(ask);
          file_listing l;
          l.path = std::move(rep.path);
          l.entries = std::move(rep.entries);
          l.truncated = rep.truncated;
          return l;
        });
      },
      [&](file_mkdir_request& r) -> caf::result<file_done> {
        return answered([&] {
          auto ask = make(io::home::op::mkdir, r.path);
          ask.flag = r.parents;
          ask.mode = r.mode;
          return file_done{worker_channel(self, cfg).ask(ask).path};
        });
      },
      [&](file_delete_request& r) -> caf::result<file_done> {
        return answered([&] {
          auto ask = make(io::home::op::remove, r.path);
          ask.flag = r.recursive;
          return file_done{worker_channel(self, cfg).ask(ask).path, true};
        });
      },
      [&](file_move_request& r) -> caf::result<file_done> {
        return answered([&] {
          auto ask = make(io::home::op::move, r.from);
          ask.to = r.to;
          ask.flag = r.overwrite;
          return file_done{worker_channel(self, cfg).ask(ask).path};
        });
      },
      [&](file_read_request& r) -> caf::result<file_opened> {
        return answered([&] {
          auto rep = worker_channel(self, cfg).ask(make(io::home::op::open_read, r.path), &reading);
          check_passed(reading, false);
          // The size as the server's descriptor has it: the head promises exactly this.
          struct stat st {};
          ::fstat(reading.get(), &st);
          rep.meta.size = static_cast<std::uint64_t>(st.st_size);
          return file_opened{rep.path, rep.meta};
        });
      },
      [&](file_write_request& r) -> caf::result<file_written> {
        return answered([&] { return upload(self, cfg, r); });
      });
  if (!reading) return;
  // The edge answers the head (or a refusal such as 416) and tells this op to go on; an
  // edge that never does (it went away) leaves the descriptor open for `idle` at most.
  self->receive(
      [&](file_send& s) {
        if (s.send) send_range(self, cfg, reading.get(), s);
      },
      caf::after(cfg.idle) >> [] {});
}

}  // namespace shellctl::actors
