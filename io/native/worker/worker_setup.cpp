#include "io/native/worker/worker_setup.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/json/json.hpp"

namespace shellctl::io::native {
namespace {

constexpr std::size_t kMaxMessage = 64 * 1024;
constexpr std::size_t kMaxFds = 2 + 64;  // base, host dir, at most 64 inputs

std::uint64_t u64(std::int64_t v) { return static_cast<std::uint64_t>(v); }

}  // namespace

bool send_setup(int sock, const worker_setup& s, std::string& err) {
  io::json::writer w;
  w.begin_object();
  w.key("scope_id").value(s.scope_id);
  w.key("generation").value(s.generation);
  w.key("created_at").value(s.created_at);
  w.key("control_token").value(s.control_token);
  w.key("cgroup").value(s.cgroup);
  w.key("image_root").value(s.image_root);
  w.key("limits").begin_object();
  w.key("input_bytes").value(s.limits.input_bytes);
  w.key("output_bytes").value(s.limits.output_bytes);
  w.key("max_jobs").value(s.limits.max_jobs);
  w.key("disk_bytes").value(s.limits.disk_bytes);
  w.key("open_files").value(s.limits.open_files);
  w.key("file_bytes").value(s.limits.file_bytes);
  w.key("job_wall_seconds").value(s.limits.job_wall_seconds);
  w.key("deadline_epoch").value(s.limits.deadline_epoch);
  w.end_object();
  w.key("input_refs").begin_array();
  for (const auto& r : s.input_refs) w.value(r);
  w.end_array();
  w.key("host_dir").value(s.host_dir);
  w.key("targets").begin_array();
  for (const auto& t : s.targets) {
    w.begin_object();
    w.key("host").value(t.host);
    w.key("port").value(static_cast<int>(t.port));
    w.end_object();
  }
  w.end_array();
  w.key("input_paths").begin_array();
  for (const auto& p : s.input_paths) w.value(p);
  w.end_array();
  w.end_object();
  std::string body = w.finish();
  std::vector<int> fds = {s.base_fd, s.host_dir_fd};
  fds.insert(fds.end(), s.input_fds.begin(), s.input_fds.end());
  if (body.size() > kMaxMessage || fds.size() > kMaxFds || s.input_fds.size() != s.input_refs.size() ||
      s.input_paths.size() != s.input_refs.size()) {
    err = "setup message too large";
    return false;
  }
  iovec iov{body.data(), body.size()};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  if (::sendmsg(sock, &msg, MSG_NOSIGNAL) != static_cast<ssize_t>(body.size())) {
    err = std::string("send setup: ") + std::strerror(errno);
    return false;
  }
  return true;
}

std::optional<worker_setup> receive_setup(int sock, std::string& err) {
  std::string buf(kMaxMessage, '\0');
  iovec iov{buf.data(), buf.size()};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * kMaxFds));
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  const ssize_t n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  if (n <= 0) {
    err = n == 0 ? "the setup socket closed" : std::string("receive setup: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::vector<int> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      const std::size_t at = fds.size();
      fds.resize(at + count);
      std::memcpy(fds.data() + at, CMSG_DATA(c), sizeof(int) * count);
    }
  auto fail = [&](const std::string& why) -> std::optional<worker_setup> {
    for (int fd : fds) ::close(fd);
    err = why;
    return std::nullopt;
  };
  if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) return fail("setup message truncated");
  buf.resize(static_cast<std::size_t>(n));
  auto o = io::json::object::parse(buf);
  if (!o) return fail("setup is not a JSON object");
  worker_setup s;
  try {
    auto str = [&](const char* k) {
      auto v = o->get_string(k);
      if (!v) throw io::json::type_error(std::string("setup lacks ") + k);
      return *v;
    };
    s.scope_id = str("scope_id");
    s.created_at = str("created_at");
    s.control_token = str("control_token");
    s.cgroup = str("cgroup");
    s.image_root = str("image_root");
    s.host_dir = str("host_dir");
    auto gen = o->get_int("generation");
    auto limits = o->get_object("limits");
    auto refs = o->get_string_array("input_refs");
    auto paths = o->get_string_array("input_paths");
    if (!gen || *gen <= 0 || !limits || !refs || !paths || paths->size() != refs->size())
      return fail("setup lacks generation, limits, input_refs or input_paths");
    s.generation = u64(*gen);
    // The scope's network targets, by index (absent: none).
    if (auto targets = o->get_object_array("targets")) {
      if (targets->size() > 16) return fail("setup holds more than 16 targets");
      for (const auto& t : *targets) {
        auto host = t.get_string("host");
        auto port = t.get_int("port");
        if (!host || host->empty() || !port || *port < 1 || *port > 65535)
          return fail("setup target lacks a host or a port");
        s.targets.push_back({*host, static_cast<std::uint16_t>(*port)});
      }
    }
    s.input_refs = *refs;
    s.input_paths = *paths;
    const std::pair<const char*, std::uint64_t*> numbers[] = {
        {"input_bytes", &s.limits.input_bytes}, {"output_bytes", &s.limits.output_bytes},
        {"max_jobs", &s.limits.max_jobs},       {"disk_bytes", &s.limits.disk_bytes},
        {"open_files", &s.limits.open_files},   {"file_bytes", &s.limits.file_bytes},
        {"job_wall_seconds", &s.limits.job_wall_seconds}, {"deadline_epoch", &s.limits.deadline_epoch}};
    for (const auto& [k, out] : numbers) {
      auto v = limits->get_int(k);
      // The wall deadline's two may be 0 (none); every other limit is a positive bound.
      const bool may_be_zero = out == &s.limits.job_wall_seconds || out == &s.limits.deadline_epoch;
      if (!v || *v < 0 || (*v == 0 && !may_be_zero))
        return fail(std::string("setup limit ") + k + " is missing or not positive");
      *out = u64(*v);
    }
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  if (fds.size() != 2 + s.input_refs.size()) return fail("setup descriptors do not match its refs");
  s.base_fd = fds[0];
  s.host_dir_fd = fds[1];
  s.input_fds.assign(fds.begin() + 2, fds.end());
  return s;
}

bool send_answer(int sock, const std::string& error) {
  io::json::writer w;
  w.begin_object();
  w.key("ok").value(error.empty());
  if (!error.empty()) w.key("error").value(error);
  w.end_object();
  const std::string body = w.finish();
  return ::send(sock, body.data(), body.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(body.size());
}

std::optional<std::string> receive_answer(int sock) {
  std::string buf(4096, '\0');
  const ssize_t n = ::recv(sock, buf.data(), buf.size(), 0);
  if (n <= 0) return std::string("the worker ended before it was ready");
  buf.resize(static_cast<std::size_t>(n));
  auto o = io::json::object::parse(buf);
  if (!o) return std::string("the worker's answer is not JSON");
  if (o->get_bool("ok").value_or(false)) return std::nullopt;
  return o->get_string("error").value_or("the worker is not ready");
}

}  // namespace shellctl::io::native
