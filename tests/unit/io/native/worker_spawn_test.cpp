// The supervisor's start of a worker on the real kernel
// (docs/native-scopes.md "The scope worker"): one clone3 into new namespaces and straight into
// a cgroup, with a pidfd; the real `shellctl native-worker` then takes its setup over fd 3,
// answers ready and serves its identity on the control socket. Checked: the worker is PID 1 of
// its PID namespace, its root maps to our uid, it sits in the cgroup it was cloned into, its
// start time is the one recorded, and a SIGKILL through its pidfd ends it.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "io/native/worker/worker_setup.hpp"
#include "io/native/worker/worker_spawn.hpp"
#include "io/sandbox/cgroups.hpp"

namespace native = shellctl::io::native;
namespace cg = shellctl::io::sandbox::cgroups;

namespace {

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string status_field(pid_t pid, const std::string& name) {
  std::istringstream in(slurp("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + ":", 0) == 0) return line.substr(name.size() + 1);
  return "";
}

// One HTTP/1.1 request over the Unix socket; the whole answer.
std::string ask(const std::string& path, const std::string& token,
                const std::string& method = "GET", const std::string& target = "/v1/worker/identity",
                const std::string& body = "") {
  const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(s);
    return "connect failed";
  }
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: w\r\nConnection: close\r\n"
                    "Authorization: Bearer " + token + "\r\n";
  if (!body.empty())
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  (void)!::write(s, req.data(), req.size());
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(s, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(s);
  return out;
}

}  // namespace

TEST_CASE("a worker cloned into its namespaces and cgroup serves its identity") {
  const char* exe = std::getenv("SHELLCTL_EXE");
  REQUIRE_MESSAGE(exe != nullptr, "SHELLCTL_EXE names the built shellctl");
  char tmpl[] = "/tmp/shellctl-spawn-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  ::chmod(dir.c_str(), 0755);
  ::mkdir((dir + "/base").c_str(), 0755);
  ::mkdir((dir + "/host").c_str(), 0700);

  // A cgroup of this test's own under the detected root.
  cg::root_choice root;
  std::string err;
  REQUIRE(cg::choose_root("", dir + "/state", root, err));
  REQUIRE_MESSAGE(!root.path.empty(), root.why_none);
  const std::string scope = root.path + "/scope-x.g1", worker = scope + "/worker";
  REQUIRE(cg::create(scope, {}, err));
  REQUIRE(cg::create(worker, {}, err));
  const int cgroup_fd = ::open(worker.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(cgroup_fd >= 0);

  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == 0);
  native::spawned_worker w;
  REQUIRE_MESSAGE(native::spawn_worker(exe, pair[1], cgroup_fd, w, err), err);
  ::close(pair[1]);
  CHECK(w.pid > 0);
  CHECK(w.pidfd >= 0);
  CHECK(w.starttime == native::process_starttime(w.pid));
  CHECK(native::boot_id().size() == 36);

  native::worker_setup s;
  s.scope_id = "scope-x";
  s.generation = 1;
  s.created_at = "2026-12-05T00:00:00Z";
  s.control_token = "ctl";
  s.cgroup = scope;
  s.limits = {4096, 65536, 4, 4u << 20, 64, 1u << 20};
  s.host_dir = dir + "/host";
  s.base_fd = ::open((dir + "/base").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  s.host_dir_fd = ::open(s.host_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(native::send_setup(pair[0], s, err));
  const auto answer = native::receive_answer(pair[0]);
  CHECK_MESSAGE(!answer.has_value(), answer.value_or(""));

  // PID 1 of its namespace, root there mapped to us, in the cgroup it was cloned into.
  CHECK(status_field(w.pid, "NSpid").find("\t1") != std::string::npos);
  const std::string uid_map = slurp("/proc/" + std::to_string(w.pid) + "/uid_map");
  CHECK(uid_map.find(" 0 ") != std::string::npos);
  const std::string cgroup = slurp("/proc/" + std::to_string(w.pid) + "/cgroup");
  CHECK_MESSAGE(cgroup.find("/scope-x.g1/worker") != std::string::npos, cgroup);

  const std::string reply = ask(dir + "/host/control.sock", "ctl");
  CHECK_MESSAGE(reply.find("200 OK") != std::string::npos, reply);
  CHECK(reply.find(R"({"scope_id":"scope-x","generation":1})") != std::string::npos);
  CHECK(ask(dir + "/host/control.sock", "wrong").find("401") != std::string::npos);

  // A job runs in a cgroup of its own below the scope's, which goes when the job ends.
  const std::string run = ask(dir + "/host/control.sock", "ctl", "POST", "/v1/jobs/run",
                              R"({"script":"echo in-scope; sleep 2","timeout_seconds":0.5})");
  CHECK_MESSAGE(run.find("in-scope") != std::string::npos, run);
  const auto id_at = run.find(R"("job_id":")");
  REQUIRE(id_at != std::string::npos);
  const std::string job = run.substr(id_at + 10, 16);
  const std::string leaf = scope + "/job-" + job;
  CHECK_MESSAGE(cg::exists(leaf), leaf);
  CHECK(cg::populated(leaf) == true);
  for (int i = 0; i < 200 && cg::exists(leaf); ++i) ::usleep(50000);
  CHECK_FALSE(cg::exists(leaf));  // ended with the job: killed, populated 0, removed

  // Ended through its pidfd: PID 1 going ends its namespace.
  REQUIRE(::syscall(SYS_pidfd_send_signal, w.pidfd, SIGKILL, nullptr, 0) == 0);
  pollfd p{w.pidfd, POLLIN, 0};
  CHECK(::poll(&p, 1, 10000) == 1);
  int status = 0;
  CHECK(::waitpid(w.pid, &status, 0) == w.pid);
  CHECK(WIFSIGNALED(status));
  ::close(w.pidfd);
  ::close(pair[0]);
  ::close(cgroup_fd);
  CHECK(cg::end(scope, std::chrono::seconds(5), err));
  cg::release_root(root);
  (void)!std::system(("rm -rf " + dir).c_str());
}
