#include "actors/files/home_files.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/fs/files.hpp"
#include "io/home/frames.hpp"
#include "io/home/state_identity.hpp"
#include "io/home/wire.hpp"

namespace shellctl::actors {
namespace {

using self_ptr = home_files_actor::stateful_pointer<home_files_state>;
using clock_type = std::chrono::steady_clock;

// A worker builds its world in a few milliseconds; a machine under load gets this long.
constexpr auto start_bound = std::chrono::seconds(20);
constexpr auto doorbell_bound = std::chrono::seconds(5);

caf::error worker_error(const std::string& why) {
  return make_job_error(job_errc::file_io_failed, "the confined file worker: " + why);
}

void stop_worker(home_files_state& st) {
  io::home::kill_helper(st.worker);
  io::home::reap_helper(st.worker);
}

// Starts the worker and waits for its first answer: serving, or why not.
caf::error start_worker(home_files_state& st, const home_files_settings& cfg) {
  struct stat home_st {};
  if (cfg.home.empty() || ::stat(cfg.home.c_str(), &home_st) != 0 || !S_ISDIR(home_st.st_mode))
    return worker_error("HOME " + cfg.home + " is not a directory");
  std::vector<std::string> args{"files", "--home", io::fs::canonical_or(cfg.home), "--home-as",
                                io::fs::absolute_clean(cfg.home)};
  args.insert(args.end(), cfg.helper.args.begin(), cfg.helper.args.end());
  args.insert(args.end(), cfg.helper.file_args.begin(), cfg.helper.file_args.end());
  std::string err;
  if (!io::home::start_helper(cfg.helper.binary, args, io::home::data_pipe::none, st.worker, err))
    return worker_error("start: " + err);
  const auto until = clock_type::now() + start_bound;
  io::home::request init;
  init.kind = io::home::op::files;
  init.skip = io::home::linked_state_files(cfg.helper.state_dir);
  io::home::send_frame(st.worker.control, io::home::encode(init), -1, until);
  std::string payload;
  const auto r = io::home::recv_frame(st.worker.control, payload, nullptr, until);
  std::optional<io::home::reply> rep;
  if (r == io::home::recv_result::frame) rep = io::home::decode_reply(payload);
  if (rep && rep->st == io::home::status::ok) return {};
  std::string why = rep ? rep->message : r == io::home::recv_result::timeout ? "it did not start in time"
                                                                              : "it ended while starting";
  stop_worker(st);
  return worker_error(why);
}

// A new channel: one end for the op, the other handed to the worker.
std::optional<io::fs::unique_fd> open_channel(home_files_state& st, std::string& err) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    err = std::string("socketpair: ") + std::strerror(errno);
    return std::nullopt;
  }
  io::fs::unique_fd mine(pair[0]);
  io::fs::unique_fd theirs(pair[1]);
  if (!io::home::send_frame(st.worker.control, "", theirs.get(), clock_type::now() + doorbell_bound)) {
    err = std::string("hand over a channel: ") + std::strerror(errno);
    return std::nullopt;
  }
  return mine;
}

}  // namespace

home_files_actor::behavior_type home_files(self_ptr self, home_files_settings cfg) {
  return {
      [self, cfg](file_channel_request&) -> caf::result<file_channel> {
        auto& st = self->state;
        // At most one fresh start per request: a worker found gone is started again once.
        for (int attempt = 0; attempt < 2; ++attempt) {
          if (st.worker.pid < 0)
            if (auto e = start_worker(st, cfg)) return e;
          std::string err;
          if (auto ch = open_channel(st, err))
            return file_channel{std::make_shared<io::fs::unique_fd>(std::move(*ch))};
          stop_worker(st);  // gone (or stuck): the next attempt starts a new one
          if (attempt == 1) return worker_error(err);
        }
        return worker_error("unavailable");
      },
      [self](shutdown_jobs&) {
        stop_worker(self->state);
        self->quit();
      },
  };
}

}  // namespace shellctl::actors
