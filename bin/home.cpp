// shellctl-home: the server's Home operations (snapshot save and restore, the file API),
// confined like a job of that HOME. See io/home/helper.hpp.
#include <cstdio>
#include <string>
#include <vector>

#include "io/home/helper.hpp"

namespace {

const char* const kHelp =
    "Usage: shellctl-home save|restore|files --home DIR --state-dir DIR --root-mount DIR\n"
    "         [--home-as PATH] [--file-root DIR]... [--ro DIR]... [--no-namespaces]\n"
    "         [--landlock-optional]\n"
    "\n"
    "Started by shellctl serve for every operation on Home, never by hand: it confines\n"
    "itself as a job of that HOME (its own namespaces and file-system view with the state\n"
    "directory masked, the job's capabilities, no_new_privs, Landlock, the job's seccomp\n"
    "filter), then performs the operation the server asks for on fd 0 (a Unix socket),\n"
    "with an archive's bytes on fd 1 (a pipe).\n"
    "\n"
    "  save      tar+zstd of Home to fd 1\n"
    "  restore   tar+zstd from fd 1 into Home\n"
    "  files     the file API's worker: stat, list, mkdir, delete, move, open\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h" || args[0] == "-help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (args.size() == 1 && (args[0] == "--version" || args[0] == "-version")) {
    std::printf("shellctl-home %s\n", SHELLCTL_VERSION);
    return 0;
  }
  return shellctl::io::home::helper_main(args);
}
