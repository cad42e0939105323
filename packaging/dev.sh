#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (see README "Set-up"):
#   bash packaging/dev.sh serve [--no-auth] [shellctl serve flags...]
#        install what is missing, build, start shellctl serve on 127.0.0.1:8765 with its
#        state in ./state; auth is on with a generated token (printed once) unless --token,
#        SHELLCTL_AUTH_TOKEN or --no-auth says otherwise; other flags go to shellctl serve
#   bash packaging/dev.sh test
#        install what is missing, build, run every test (twice for the end-to-end suites:
#        once as is, once with every core busy under a nohup-style parent) and the fuzzers
#   bash packaging/dev.sh install-cli
#        copies the built dify-agent to /usr/local/bin (serve does it; the docs' test too)
# Installs only Debian packages; everything else is in this repository.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DEPS=(meson ninja-build pkg-config g++ libcaf-dev libuv1-dev node-llhttp libsqlite3-dev
  libsimdjson-dev libzstd-dev libarchive-dev libssl-dev doctest-dev libseccomp-dev libcap-dev
  libcurl4-openssl-dev)
# jq: the README's walk-through picks job ids with it.
RUN_DEPS=(tmux zstd python3 sqlite3 util-linux procps passwd jq)
# podman/runc/debootstrap build and run the sandbox image (tests/e2e/image); prometheus
# brings promtool, which checks /metrics; apparmor and seccomp bring apparmor_parser and
# scmp_sys_resolver (the native supervisor's deployment files); iproute2 makes the network
# namespace the broker's tests run in.
TEST_DEPS=(clang libclang-rt-14-dev wrk nginx-light strace gdb systemd podman runc debootstrap
  apparmor seccomp iproute2
  containernetworking-plugins iptables prometheus)

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

install_missing() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  local log="${TMPDIR:-/tmp}/shellctl-apt.log"
  echo "installing ${#missing[@]} Debian packages (a minute or two; log: $log): ${missing[*]}"
  if ! { as_root apt-get update -qq &&
         as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
           --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "apt-get failed (whole log: $log)" >&2
    exit 1
  fi
}

# The binaries `serve` needs: the server, its helpers and dify-agent (which jobs run).
SERVING_TARGETS=(bin/shellctl bin/shellctl-runner bin/shellctl-runner-exit bin/shellctl-sanitize-pty
  bin/shellctl-home bin/dify-agent)

# build [targets...]: everything by default; `serve` asks only for SERVING_TARGETS (about
# three quarters of the compile: the tests, fuzz harnesses and benchmarks wait for `test`).
build() {
  # Warnings are errors: the tree is kept clean at -Wall -Wextra with gcc and clang.
  if [ ! -f build/build.ninja ]; then
    echo "configuring build/ (meson)"
    if ! meson setup build -Dwerror=true > "${TMPDIR:-/tmp}/shellctl-meson-setup.log" 2>&1; then
      tail -n 30 "${TMPDIR:-/tmp}/shellctl-meson-setup.log"
      echo "meson setup FAILED (log: ${TMPDIR:-/tmp}/shellctl-meson-setup.log)" >&2
      exit 1
    fi
  fi
  echo "building ${1:+the server, its helpers and dify-agent }(ninja -C build; a few minutes the first time)"
  if ! ninja -C build "$@" > build/meson-logs/ninja.log 2>&1; then
    grep -v "^\[" build/meson-logs/ninja.log | tail -n 60
    echo "build FAILED (log: build/meson-logs/ninja.log)" >&2
    exit 1
  fi
  [ -x build/bin/shellctl ] || { echo "build failed: no build/bin/shellctl" >&2; exit 1; }
}

# The OpenAPI validator the tests use (@apidevtools/swagger-parser), from npm into build/npm.
install_npm_tools() {
  [ -f build/npm/node_modules/@apidevtools/swagger-parser/package.json ] && return 0
  command -v npm >/dev/null || install_missing nodejs npm
  echo "installing the OpenAPI validator from npm (build/npm; log: build/npm/install.log)"
  mkdir -p build/npm
  # Not --silent: a failure's cause (a proxy, a TLS interception) must be in the log.
  if ! (cd build/npm && npm install --no-audit --no-fund --loglevel=warn --prefix . \
          @apidevtools/swagger-parser@10.1.1) > build/npm/install.log 2>&1; then
    tail -n 20 build/npm/install.log
    # The registry's certificate is not one node trusts: something on the way (a proxy, an
    # egress gateway) re-signs TLS with a CA this machine's store does not hold.
    if grep -qE "SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|CERT_UNTRUSTED" \
         build/npm/install.log; then
      echo "npm could not verify registry.npmjs.org's certificate: this network re-signs TLS." >&2
      echo "Add its CA to the system store (copy it to /usr/local/share/ca-certificates/ and run" >&2
      echo "update-ca-certificates; Debian's node trusts that store), or set NODE_EXTRA_CA_CERTS." >&2
    fi
    echo "npm install failed (log: build/npm/install.log)" >&2
    exit 1
  fi
}

# The end-to-end suites, optionally under load. Every result is counted from meson's log.
# The tree built with clang (-Werror), then each libFuzzer target for FUZZ_SECONDS (25),
# $(nproc) at a time. Prints what failed (the build's errors, a fuzzer's crash) and
# returns non-zero on any failure.
clang_and_fuzz() {
  echo "building with clang (build-fuzz/)"
  if [ ! -f build-fuzz/build.ninja ] &&
     ! CC=clang CXX=clang++ meson setup build-fuzz -Dfuzz=true -Dwerror=true > "${TMPDIR:-/tmp}/shellctl-meson-setup-fuzz.log" 2>&1; then
    tail -n 30 "${TMPDIR:-/tmp}/shellctl-meson-setup-fuzz.log"
    echo "clang build FAILED at meson setup (log: ${TMPDIR:-/tmp}/shellctl-meson-setup-fuzz.log)"
    return 1
  fi
  if ! ninja -C build-fuzz -j "$(nproc)" > build-fuzz/ninja.log 2>&1; then
    grep -v "^\[" build-fuzz/ninja.log | tail -n 60
    echo "clang build FAILED"
    return 1
  fi
  local f failed=0 running=0
  for f in http json tmux archive agent_cli paths native home; do
    if [ "$running" -ge "$(nproc)" ]; then
      wait -n || failed=1
      running=$((running - 1))
    fi
    (
      corpus=$(mktemp -d)
      seeds=tests/fuzz/$f/corpus
      [ -d "$seeds" ] || seeds=
      log=build-fuzz/${f}_fuzz.log
      rc=0
      ./build-fuzz/tests/fuzz/$f/${f}_fuzz -max_total_time="${FUZZ_SECONDS:-25}" \
        -max_len=8192 -timeout=20 -print_final_stats=1 "$corpus" $seeds > "$log" 2>&1 || rc=$?
      rm -rf "$corpus"
      if [ "$rc" -ne 0 ]; then
        tail -n 60 "$log"
        echo "fuzzer $f FAILED (log: $log)"
        exit 1
      fi
      echo "fuzzed $f for ${FUZZ_SECONDS:-25} s: $(grep -E "^Done" "$log")"
    ) &
    running=$((running + 1))
  done
  while [ "$running" -gt 0 ]; do
    wait -n || failed=1
    running=$((running - 1))
  done
  rm -rf /tmp/shellctl-archive-fuzz-* /tmp/shellctl-paths-fuzz-* /tmp/shellctl-home-fuzz-*  # the targets' trees
  return "$failed"
}

run_suites() {
  local name=$1
  shift
  local rc=0
  meson test -C build --print-errorlogs --num-processes 1 "$@" || rc=$?
  python3 - "$name" <<'PY'
import json, sys
passed = failed = skipped = 0
for line in open("build/meson-logs/testlog.json"):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"): passed += 1
    elif r == "SKIP": skipped += 1
    else: failed += 1
print(f"{sys.argv[1]}: {passed} passed, {failed} failed, {skipped} skipped")
PY
  return "$rc"
}

# One line per stage of `test`: the first pass, the stress pass, the clang build and each
# fuzzer, each passed / failed / not run (the fuzzers' from build-fuzz/<name>_fuzz.log).
stage_summary() {
  local first=$1 stress=$2 clang=$3 f state
  echo "---- summary"
  echo "first pass (every suite): $first"
  echo "stress pass (e2e under load): $stress"
  if [ "$clang" = "not run" ] || [ ! -f build-fuzz/ninja.log ]; then
    echo "clang build: not run"
  elif grep -q "^clang build FAILED" build/meson-logs/clang-and-fuzz.log 2>/dev/null; then
    echo "clang build: failed"
  else
    echo "clang build: passed"
  fi
  for f in http json tmux archive agent_cli paths native home; do
    if [ "$clang" = "not run" ] || [ ! -f "build-fuzz/${f}_fuzz.log" ]; then state="not run"
    elif grep -q "^fuzzer $f FAILED" build/meson-logs/clang-and-fuzz.log 2>/dev/null; then state=failed
    elif grep -q "^Done" "build-fuzz/${f}_fuzz.log"; then state=passed
    else state=failed
    fi
    echo "fuzzer $f: $state"
  done
}

# Jobs see the system trees but not this clone: dify-agent goes where both they and this
# shell find it (README "Trying dify-agent"; `rm /usr/local/bin/dify-agent` undoes it).
install_cli() {
  local built="${SHELLCTL_BUILD_DIR:-build}/bin/dify-agent"
  cmp -s "$built" /usr/local/bin/dify-agent ||
    as_root install -D -m 0755 "$built" /usr/local/bin/dify-agent
}

case "${1:-}" in
  install-cli)
    install_cli
    ;;
  serve)
    shift
    install_missing "${BUILD_DEPS[@]}" "${RUN_DEPS[@]}"
    build "${SERVING_TARGETS[@]}"
    install_cli
    args=() have_listen=0 have_state=0 have_token=0 no_auth=0
    for a in "$@"; do
      case "$a" in
        --no-auth) no_auth=1; continue ;;
        -listen|--listen|-listen=*|--listen=*) have_listen=1 ;;
        -state-dir|--state-dir|-state-dir=*|--state-dir=*) have_state=1 ;;
        -token|--token|-token=*|--token=*) have_token=1 ;;
      esac
      args+=("$a")
    done
    [ $have_listen -eq 1 ] || args+=(--listen "${SHELLCTL_LISTEN:-127.0.0.1:8765}")
    # State (database, job files, tmux socket) lives in ./state; nothing needs root.
    [ $have_state -eq 1 ] || args+=(--state-dir ./state)
    if [ $no_auth -eq 1 ]; then
      unset SHELLCTL_AUTH_TOKEN
      [ $have_token -eq 0 ] || { echo "--no-auth and --token contradict each other" >&2; exit 2; }
    elif [ $have_token -eq 0 ] && [ -z "${SHELLCTL_AUTH_TOKEN:-}" ]; then
      SHELLCTL_AUTH_TOKEN=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
      export SHELLCTL_AUTH_TOKEN
      echo "auth token (send it as 'Authorization: Bearer <token>'; shown only now):"
      echo "  $SHELLCTL_AUTH_TOKEN"
    fi
    echo "stop with Ctrl-C: jobs keep running in tmux (README \"Stopping and cleaning up\")"
    exec ./build/bin/shellctl serve "${args[@]}"
    ;;
  test)
    # A set-up step that fails exits at once, with its cause: the stages did not run.
    trap 'stage_summary "not run (the set-up failed)" "not run" "not run"' EXIT
    install_missing "${BUILD_DEPS[@]}" "${RUN_DEPS[@]}" "${TEST_DEPS[@]}"
    build
    install_npm_tools
    trap - EXIT
    first_rc=0
    run_suites "all suites" || first_rc=$?
    if [ "$first_rc" -ne 0 ]; then
      stage_summary failed "not run" "not run"
      echo "tests FAILED: the first pass (log: build/meson-logs/testlog.txt)" >&2
      exit 1
    fi
    # Stress mode: the end-to-end suites again with every core busy and SIGHUP ignored, as
    # under nohup: a flaky test is a bug. The load is useful work: the whole tree built
    # again with clang (warnings are errors there too), then the libFuzzer targets (HTTP
    # front, JSON decoder, tmux quoting, snapshot excludes and restore, dify-agent, paths,
    # native scopes; bounded runs, any crash fails), $(nproc) at a time; bounded CPU hogs
    # keep the cores busy if the suites outlast them. Left out of the pass, to keep CI well
    # under its time: the load suite (a load test of its own), dify-agent's suite (a client
    # against a stub, no job server timing) and the native component suites (their own
    # processes and kernel set-up, run once above).
    echo "stress pass: end-to-end suites while the clang build and the fuzzers (then CPU hogs) keep $(nproc) cores busy, SIGHUP ignored"
    clang_log=build/meson-logs/clang-and-fuzz.log
    ( clang_and_fuzz ) >"$clang_log" 2>&1 &
    clang_pid=$!
    stress_rc=0
    nohup_log=build/meson-logs/stress-pass.log
    ( trap '' HUP; exec bash -c \
        'meson test -C build --print-errorlogs --num-processes 1 --suite e2e --no-suite load --no-suite agent-cli --no-suite native-component' ) \
      >"$nohup_log" 2>&1 &
    stress_pid=$!
    clang_rc=0
    wait "$clang_pid" || clang_rc=$?
    hogs=()
    if kill -0 "$stress_pid" 2>/dev/null; then
      for _ in $(seq "$(nproc)"); do
        timeout 3600 sh -c 'while :; do :; done' &
        hogs+=($!)
      done
    fi
    wait "$stress_pid" || stress_rc=$?
    if [ ${#hogs[@]} -gt 0 ]; then
      kill "${hogs[@]}" 2>/dev/null || true
      wait "${hogs[@]}" 2>/dev/null || true
    fi
    grep -E "^ *[0-9]+/[0-9]+ " "$nohup_log" || true
    if [ "$stress_rc" -ne 0 ]; then
      grep -E -B2 -A25 "^(FAIL|ERROR):" "$nohup_log" | head -n 200 || true
    fi
    cat "$clang_log"
    stage_summary passed "$([ "$stress_rc" -eq 0 ] && echo passed || echo failed)" \
      "$([ "$clang_rc" -eq 0 ] && echo passed || echo failed)"
    if [ "$stress_rc" -ne 0 ] || [ "$clang_rc" -ne 0 ]; then
      [ "$stress_rc" -eq 0 ] || echo "stress pass FAILED (log: $nohup_log)" >&2
      [ "$clang_rc" -eq 0 ] || echo "clang build or fuzzing FAILED (log: $clang_log)" >&2
      exit 1
    fi
    echo "all tests and fuzzers passed"
    ;;
  *)
    echo "usage: bash packaging/dev.sh serve [--no-auth] [shellctl serve flags...]" >&2
    echo "       bash packaging/dev.sh test" >&2
    echo "       bash packaging/dev.sh install-cli" >&2
    exit 2
    ;;
esac
