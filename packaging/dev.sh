#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (see README "Set-up"):
#   bash packaging/dev.sh serve   install what is missing, build, start shellctl serve
#   bash packaging/dev.sh test    install what is missing, build, run every test + fuzzers
# Installs only Debian packages; everything else is in this repository.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DEPS=(meson ninja-build pkg-config g++ libcaf-dev libuv1-dev node-llhttp libsqlite3-dev
  libsimdjson-dev libzstd-dev libarchive-dev doctest-dev libseccomp-dev libcap-dev)
RUN_DEPS=(tmux zstd python3 sqlite3 util-linux procps passwd)
TEST_DEPS=(clang libclang-rt-14-dev wrk nginx-light)

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

install_missing() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${missing[@]}"
  fi
}

build() {
  # Warnings are errors: the tree is kept clean at -Wall -Wextra with gcc and clang.
  [ -f build/build.ninja ] || meson setup build -Dwerror=true
  ninja -C build
}

case "${1:-}" in
  serve)
    install_missing "${BUILD_DEPS[@]}" "${RUN_DEPS[@]}"
    build
    # State lives in ./state (database, job files, tmux socket); nothing needs root.
    exec ./build/bin/shellctl serve --listen "${SHELLCTL_LISTEN:-127.0.0.1:8765}" --state-dir ./state
    ;;
  test)
    install_missing "${BUILD_DEPS[@]}" "${RUN_DEPS[@]}" "${TEST_DEPS[@]}"
    build
    rc=0
    meson test -C build --print-errorlogs --num-processes 1 || rc=$?
    # One plain summary line for CI, counted from meson's own log.
    python3 - <<'PY'
import json
passed = failed = skipped = 0
for line in open("build/meson-logs/testlog.json"):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"): passed += 1
    elif r == "SKIP": skipped += 1
    else: failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
    [ "$rc" -eq 0 ] || exit "$rc"
    # The whole tree again with clang (warnings are errors there too), then the libFuzzer
    # targets over the HTTP front, the JSON decoder and the tmux quoting: bounded runs, any crash fails.
    [ -f build-fuzz/build.ninja ] || CC=clang CXX=clang++ meson setup build-fuzz -Dfuzz=true -Dwerror=true
    ninja -C build-fuzz
    for f in http json tmux; do
      corpus=$(mktemp -d)
      seeds=tests/fuzz/$f/corpus
      [ -d "$seeds" ] || seeds=
      log=build-fuzz/${f}_fuzz.log
      echo "fuzzing $f for ${FUZZ_SECONDS:-60} s (log: $log)"
      if ! ./build-fuzz/tests/fuzz/$f/${f}_fuzz -max_total_time="${FUZZ_SECONDS:-60}" \
          -max_len=8192 -print_final_stats=1 "$corpus" $seeds > "$log" 2>&1; then
        tail -n 60 "$log"
        echo "fuzzer $f FAILED" >&2
        exit 1
      fi
      grep -E "^Done|^stat::number_of_executed_units" "$log"
      rm -rf "$corpus"
    done
    echo "all tests and fuzzers passed"
    ;;
  *)
    echo "usage: bash packaging/dev.sh serve|test" >&2
    exit 2
    ;;
esac
