#pragma once
// A tmux server of our own for unit tests, driven through io::tmux::control_client (the
// server's own client): lines come from its reader thread.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "io/tmux/control_client.hpp"

namespace shellctl::test {

// A tmux server of our own; lines come from the control client's reader thread.
struct real_tmux {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> lines;
  std::string dir;
  std::unique_ptr<shellctl::io::tmux::control_client> client;

  real_tmux() {
    char tmpl[] = "/tmp/shellctl-tmux-unit-XXXXXX";
    dir = ::mkdtemp(tmpl);
    std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=" + dir};
    client = std::make_unique<shellctl::io::tmux::control_client>(
        dir + "/tmux.sock", env,
        [this](std::vector<std::string> l) {
          std::lock_guard<std::mutex> lk(mu);
          for (auto& x : l) lines.push_back(std::move(x));
          cv.notify_all();
        },
        [] {});
  }
  ~real_tmux() {
    client->send("kill-server");
    client.reset();
    std::system(("rm -rf '" + dir + "'").c_str());
  }

  // Sends one line and returns the output block of its answer: the next block whose
  // %begin carries flags 1 (a command of ours; flags 0 are tmux's own).
  std::vector<std::string> run(const std::string& line, bool& ok) {
    std::unique_lock<std::mutex> lk(mu);
    std::size_t next = lines.size();
    lk.unlock();
    REQUIRE(client->send(line));
    lk.lock();
    bool in = false;
    std::vector<std::string> out;
    for (;;) {
      if (next == lines.size())
        REQUIRE(cv.wait_for(lk, std::chrono::seconds(10), [&] { return next < lines.size(); }));
      const std::string l = lines[next++];
      if (!in) {
        in = l.rfind("%begin ", 0) == 0 && l.compare(l.size() - 2, 2, " 1") == 0;
        continue;
      }
      if (l.rfind("%end ", 0) == 0 || l.rfind("%error ", 0) == 0) {
        ok = l[1] == 'e' && l[2] == 'n';
        return out;
      }
      out.push_back(l);
    }
  }
};


}  // namespace shellctl::test
