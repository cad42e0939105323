#include "io/home/helper.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <thread>

#include "io/archive/excludes.hpp"
#include "io/archive/home_reader.hpp"
#include "io/archive/home_writer.hpp"
#include "io/fs/file_ops.hpp"
#include "io/fs/file_roots.hpp"
#include "io/fs/files.hpp"
#include "io/home/confine.hpp"
#include "io/home/frames.hpp"
#include "io/home/wire.hpp"

namespace shellctl::io::home {
namespace {

constexpr int kControl = 0;
constexpr int kData = 1;

enum class role { save, restore, files };

struct options {
  role r = role::save;
  confine_spec spec;
  std::string home_as;  // the file API's Home as the server's $HOME names it
  std::vector<std::string> file_roots;
};

void say(const std::string& text) {
  const std::string line = "shellctl-home: " + text + "\n";
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

bool parse(const std::vector<std::string>& args, options& o, std::string& err) {
  if (args.empty()) {
    err = "usage: shellctl-home save|restore|files --home DIR --state-dir DIR --root-mount DIR ...";
    return false;
  }
  if (args[0] == "save") o.r = role::save;
  else if (args[0] == "restore") o.r = role::restore;
  else if (args[0] == "files") o.r = role::files;
  else {
    err = "unknown role " + args[0];
    return false;
  }
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= args.size()) {
        err = a + " needs a value";
        return false;
      }
      out = args[++i];
      return true;
    };
    std::string v;
    if (a == "--home") { if (!value(o.spec.home)) return false; }
    else if (a == "--state-dir") { if (!value(o.spec.state_dir)) return false; }
    else if (a == "--root-mount") { if (!value(o.spec.root_mount)) return false; }
    else if (a == "--home-as") { if (!value(o.home_as)) return false; }
    else if (a == "--file-root") { if (!value(v)) return false; o.file_roots.push_back(v); }
    else if (a == "--ro") { if (!value(v)) return false; o.spec.ro_dirs.push_back(v); }
    else if (a == "--no-namespaces") o.spec.namespaces = false;
    else if (a == "--landlock-optional") o.spec.require_landlock = false;
    else {
      err = "unknown argument " + a;
      return false;
    }
  }
  for (const auto* p : {&o.spec.home, &o.spec.state_dir, &o.spec.root_mount})
    if (p->empty() || (*p)[0] != '/') {
      err = "--home, --state-dir and --root-mount need absolute paths";
      return false;
    }
  return true;
}

void reply_with(const reply& r, int fd = -1) { send_frame(kControl, encode(r), fd); }

reply failure(status st, const std::string& message) {
  reply r;
  r.st = st;
  r.message = message;
  return r;
}

// The request the role starts with, or nullopt (said on stderr) when the server sent
// something else or went away.
std::optional<request> first_request(op expected) {
  std::string payload;
  if (recv_frame(kControl, payload, nullptr) != recv_result::frame) return std::nullopt;
  auto req = decode_request(payload);
  if (!req || req->kind != expected) {
    say("the server's first request is not the role's");
    return std::nullopt;
  }
  return req;
}

using identity_set = std::set<std::pair<std::uint64_t, std::uint64_t>>;

identity_set identities(const request& req) {
  return identity_set(req.skip.begin(), req.skip.end());
}

bool in(const identity_set& s, const struct stat& st) {
  return s.count({static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)}) > 0;
}

// The state dir as this process sees it: inside the world, the empty read-only tmpfs that
// masks it (its device is its own, so that whatever carries it lies in the mask); without
// namespaces, the state dir itself.
struct state_mark {
  bool known = false;
  bool masked = false;
  struct stat st {};

  explicit state_mark(const confine_spec& spec) {
    known = ::stat(spec.state_dir.c_str(), &st) == 0;
    masked = spec.namespaces;
  }
  bool dir_is_state(const struct stat& s) const {
    return known && S_ISDIR(s.st_mode) && s.st_dev == st.st_dev && s.st_ino == st.st_ino;
  }
  bool within(const struct stat& s) const {
    return known && (masked ? s.st_dev == st.st_dev : dir_is_state(s));
  }
};

// ---------------------------------------------------------------- save and restore

int save(const options& o) {
  auto req = first_request(op::save);
  if (!req) return 1;
  const state_mark state(o.spec);
  const identity_set skip = identities(*req);
  // Never the state dir, by identity: the mask itself (or the state dir), and every file of
  // the state dir that has another name in Home.
  const archive::save_filter leave_out = [&](const struct stat& st) {
    return state.dir_is_state(st) || (state.masked && state.within(st)) ||
           (!S_ISDIR(st.st_mode) && in(skip, st));
  };
  archive::snapshot_excludes excludes(req->excludes);
  auto sink = [](std::string_view chunk) { return fs::write_all(kData, chunk.data(), chunk.size()); };
  const auto r = archive::write_home_archive(o.spec.home, excludes, sink, [] { return false; }, leave_out);
  ::close(kData);  // the end of the archive: the server reads to EOF
  reply out;
  out.st = r.ok ? status::ok : status::failed;
  out.message = r.error;
  out.count = r.entries;
  reply_with(out);
  return r.ok ? 0 : 1;
}

// The archive from the server's pipe. Read on the restore's decompressing thread; a restore
// that ended early (a malformed entry) cancels a read that waits for more.
class pipe_source : public archive::byte_source {
 public:
  pipe_source() : cancel_(::eventfd(0, EFD_CLOEXEC)) {}
  ~pipe_source() override {
    if (cancel_ >= 0) ::close(cancel_);
  }
  std::ptrdiff_t read(char* buf, std::size_t cap) override {
    for (;;) {
      pollfd p[2] = {{kData, POLLIN, 0}, {cancel_, POLLIN, 0}};
      if (::poll(p, cancel_ >= 0 ? 2 : 1, -1) < 0 && errno != EINTR) break;
      if (cancel_ >= 0 && p[1].revents != 0) {
        failure_ = "the restore ended";
        return -1;
      }
      if (p[0].revents == 0) continue;
      const ssize_t n = ::read(kData, buf, cap);
      if (n >= 0) return n;
      if (errno == EINTR || errno == EAGAIN) continue;
      break;
    }
    failure_ = std::string("read the archive: ") + std::strerror(errno);
    return -1;
  }
  std::string failure() const override { return failure_; }
  void cancel() override {
    const std::uint64_t one = 1;
    if (cancel_ >= 0) (void)!::write(cancel_, &one, sizeof one);
  }

 private:
  int cancel_;
  std::string failure_;
};

int restore(const options& o) {
  auto req = first_request(op::restore);
  if (!req) return 1;
  const state_mark state(o.spec);
  const identity_set skip = identities(*req);
  const archive::restore_filter off_limits = [&](const struct stat& st) {
    return state.within(st) || (!S_ISDIR(st.st_mode) && in(skip, st));
  };
  pipe_source body;
  const auto r = archive::restore_home(o.spec.home, body, [] { return false; }, off_limits);
  reply out;
  using outcome = archive::restore_result::outcome;
  out.st = r.result == outcome::ok ? status::ok
           : r.result == outcome::malformed ? status::malformed : status::failed;
  out.message = r.message;
  out.count = static_cast<std::uint64_t>(r.entries);
  out.bytes = static_cast<std::uint64_t>(r.bytes_written);
  reply_with(out);
  return out.st == status::ok ? 0 : 1;
}

// ---------------------------------------------------------------- the file worker

void send_on(int channel, const reply& r, int fd = -1) { send_frame(channel, encode(r), fd); }

// One channel: requests one at a time until the server closes it.
void serve_channel(const fs::file_roots& roots, int channel) {
  std::unique_ptr<fs::file_upload> upload;  // between open_write and commit
  for (;;) {
    std::string payload;
    if (recv_frame(channel, payload, nullptr) != recv_result::frame) break;
    auto req = decode_request(payload);
    if (!req) {
      send_on(channel, failure(status::io, "the file worker could not read the request"));
      break;
    }
    reply out;
    int pass = -1;  // a descriptor that goes with the reply
    try {
      switch (req->kind) {
        case op::stat: {
          auto s = fs::stat_path(roots, req->path);
          out.path = std::move(s.path);
          out.meta = std::move(s.meta);
          break;
        }
        case op::list: {
          auto l = fs::list_dir(roots, req->path, static_cast<std::size_t>(req->limit));
          out.path = std::move(l.path);
          out.entries = std::move(l.entries);
          out.truncated = l.truncated;
          break;
        }
        case op::mkdir:
          out.path = fs::make_directory(roots, req->path, req->flag, req->mode.value_or(0755));
          break;
        case op::remove:
          out.path = fs::remove_path(roots, req->path, req->flag);
          break;
        case op::move:
          out.path = fs::move_path(roots, req->path, req->to, req->flag);
          break;
        case op::open_read: {
          fs::file_reader reader(roots, req->path);
          out.path = reader.path();
          out.meta = reader.meta();
          pass = ::fcntl(reader.fd(), F_DUPFD_CLOEXEC, 0);
          if (pass < 0) throw fs::file_failure(fs::file_errc::io, std::string("open: ") + std::strerror(errno));
          break;
        }
        case op::open_write:
          upload = std::make_unique<fs::file_upload>(roots, req->path, req->mode, req->flag);
          out.path = upload->path();
          pass = upload->fd();
          break;
        case op::discard:
          upload.reset();  // its space is free before the answer
          break;
        case op::commit:
          if (!upload) throw fs::file_failure(fs::file_errc::io, "commit without an upload");
          out.path = upload->path();
          out.meta.size = upload->commit();
          upload.reset();
          break;
        default:
          throw fs::file_failure(fs::file_errc::io, "not a file API request");
      }
    } catch (const fs::file_failure& e) {
      out = failure(status_of(e.code), e.what());
    } catch (const std::exception& e) {
      out = failure(status::io, e.what());
    }
    // A commit that failed drops its temporary file before the answer, as discard does.
    if (req->kind == op::commit && out.st != status::ok) upload.reset();
    send_on(channel, out, pass);
    if (pass >= 0 && req->kind == op::open_read) ::close(pass);
  }
  ::close(channel);  // an upload never committed is dropped with `upload`
}

int files(const options& o) {
  auto req = first_request(op::files);
  if (!req) return 1;
  // Shared with the channels' threads, which may outlive this loop by an instant.
  std::shared_ptr<const fs::file_roots> roots;
  try {
    roots = std::make_shared<const fs::file_roots>(o.home_as.empty() ? o.spec.home : o.home_as,
                                                   o.file_roots, o.spec.state_dir, identities(*req));
  } catch (const std::exception& e) {
    reply_with(failure(status::failed, e.what()));
    return 1;
  }
  reply_with(reply{});  // serving
  for (;;) {
    std::string payload;
    int channel = -1;
    const auto r = recv_frame(kControl, payload, &channel);
    if (r != recv_result::frame) break;  // the server is gone: so is the worker
    if (channel < 0) continue;
    // A thread per channel: a slow request (a large recursive delete) holds only its own.
    std::thread([roots, channel] { serve_channel(*roots, channel); }).detach();
  }
  return 0;
}

}  // namespace

int helper_main(const std::vector<std::string>& args) {
  options o;
  std::string err;
  if (!parse(args, o, err)) {
    say(err);
    return 2;
  }
  // Nothing of the server's but the three descriptors it handed over.
  ::close_range(3, ~0U, 0);
  if (o.r == role::files) {
    o.spec.rw_dirs = o.file_roots;
    if (!o.home_as.empty() && o.home_as != o.spec.home) o.spec.rw_dirs.push_back(o.home_as);
  }
  auto report = [](const std::string& why) {
    say(why);
    reply_with(failure(status::failed, why));
  };
  return run_confined(o.spec, {kControl, kData},
                      [&o] {
                        switch (o.r) {
                          case role::save: return save(o);
                          case role::restore: return restore(o);
                          case role::files: return files(o);
                        }
                        return 2;
                      },
                      report);
}

}  // namespace shellctl::io::home
