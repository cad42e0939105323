// shellctl serve: parses flags and environment, then hands over to actors::serve.
#include <csignal>
#include <cstdio>

#include "actors/serve.hpp"
#include "io/config/serve_config.hpp"

extern char** environ;

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a vanished peer is an error return, not a death
  shellctl::io::config::serve_config cfg;
  std::string message;
  using shellctl::io::config::parse_result;
  switch (shellctl::io::config::parse_serve(argc, argv, environ, cfg, message)) {
    case parse_result::run:
      return shellctl::actors::serve(cfg);
    case parse_result::exit_ok:
      std::fputs(message.c_str(), stderr);
      return 0;
    case parse_result::exit_usage_error:
      std::fputs(message.c_str(), stderr);
      return 2;
    case parse_result::exit_config_error:
      std::fputs(message.c_str(), stderr);
      return 1;
  }
  return 1;
}
