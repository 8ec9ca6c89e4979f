#!/usr/bin/env bash
# Builds tests/install/embedded, a project that embeds the avout source tree, two ways:
#   1. add_subdirectory with only the ZooKeeper store: the configure must not look for what
#      only the other stores, the tools or the tests need (hiredis, libpqxx, CLI11, doctest);
#   2. FetchContent with every store.
# Each program is run and its output checked. Run by ctest (test embed_check, plain build);
# by hand: tests/install/embed.sh SOURCE_ROOT [CXX_COMPILER] [COMPILER_LAUNCHER]
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 SOURCE_ROOT [CXX_COMPILER] [COMPILER_LAUNCHER]" >&2
  exit 2
fi
source_root=$(cd "$1" && pwd)
cxx=${2:-c++}
launcher=${3:-}

fail() {
  echo "embed check FAILED: $*" >&2
  exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/avout-embed-check.XXXXXX")
trap 'rm -rf "$work"' EXIT

# embed NAME WAY [CMAKE_OPTIONS...]: configures and builds the project in $work/NAME.
# Build type None (no optimization, no debug information) compiles fastest: this checks
# configuring and linking.
embed() {
  local name=$1 way=$2
  shift 2
  echo "== $name: avout through $way $*"
  cmake -S "$source_root/tests/install/embedded" -B "$work/$name" \
    -DAVOUT_SOURCE_DIR="$source_root" -DAVOUT_EMBED="$way" -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" "$@" \
    >"$work/$name-configure.log" 2>&1 ||
    { cat "$work/$name-configure.log" >&2; fail "$name: configuring failed"; }
  cmake --build "$work/$name" -j "$(nproc)" >"$work/$name-build.log" 2>&1 ||
    { tail -50 "$work/$name-build.log" >&2; fail "$name: building failed"; }
}

# run_and_expect NAME LINE...: runs the program and checks each line is in its output.
run_and_expect() {
  local name=$1 output line
  shift
  output=$("$work/$name/avout_embed_check") || fail "$name: the program exited with status $?"
  printf '%s\n' "$output" | sed "s/^/  [$name] /"
  for line in "$@"; do
    grep -qF -- "$line" <<<"$output" || fail "$name: expected the line '$line'"
  done
}

embed zookeeper-only add_subdirectory -DAVOUT_WITH_REDIS=OFF -DAVOUT_WITH_POSTGRES=OFF
# Nothing only another part needs was looked for.
if grep -Ei '^(HIREDIS|PQXX|PQ|CLI11|DOCTEST)[A-Z_]*:' "$work/zookeeper-only/CMakeCache.txt"; then
  fail "zookeeper-only: the configure looked for a dependency it does not need"
fi
run_and_expect zookeeper-only 'install check OK'

embed every-store FetchContent
run_and_expect every-store 'schemes: postgres postgresql redis rediss tcp unix zookeeper' \
  'install check OK'

echo "embed check passed"
