#!/usr/bin/env bash
# Installs an avout build tree into a temporary prefix, then builds tests/install/project
# against it twice, once with find_package(avout ... COMPONENTS zookeeper redis postgres) and
# once with `pkg-config --cflags --libs avout`, runs both binaries and checks what they print.
# Run by ctest (test install_check, label fast); by hand:
#   tests/install/check.sh BUILD_DIR tests/install/project [CXX_COMPILER] [EXTRA_FLAGS] [with-tool]
# EXTRA_FLAGS (sanitizer builds) go to compiling and linking the outside project; with-tool:
# the build has the `avout` command line, which must be installed too.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR PROJECT_DIR [CXX_COMPILER] [EXTRA_FLAGS] [with-tool]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
project=$(cd "$2" && pwd)
cxx=${3:-c++}
flags=${4:-}
tool=${5:-no-tool}
source_root=$(cd "$project/../../.." && pwd)

fail() {
  echo "install check FAILED: $*" >&2
  exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/avout-install-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" ||
  { cat "$work/install.log" >&2; fail "cmake --install failed"; }

# What must be there: every public header of the source tree, and no private one.
headers=0
for include in "$source_root"/core/include "$source_root"/backends/*/include; do
  while IFS= read -r header; do
    [ -f "$prefix/include/$header" ] || fail "public header include/$header not installed"
    headers=$((headers + 1))
  done < <(cd "$include" && find avout -name '*.hpp')
done
[ "$headers" -gt 10 ] || fail "found only $headers public headers in $source_root"
installed=$(find "$prefix/include" -name '*.hpp' | wc -l)
[ "$installed" -eq "$headers" ] || fail "$installed headers installed, $headers public ones"
find "$prefix" -name '*.cpp' | grep -q . && fail "source files were installed"
for library in avout_core avout_zookeeper avout_redis avout_postgres; do
  find "$prefix" -name "lib$library.a" -o -name "lib$library.so" | grep -q . ||
    fail "library $library not installed"
done
config=$(find "$prefix" -name avoutConfig.cmake)
[ -n "$config" ] || fail "avoutConfig.cmake not installed"
[ -f "$(dirname "$config")/avoutConfigVersion.cmake" ] || fail "avoutConfigVersion.cmake not installed"
pc=$(find "$prefix" -name avout.pc)
[ -n "$pc" ] || fail "avout.pc not installed"
if [ "$tool" = with-tool ]; then
  [ -x "$prefix/bin/avout" ] || fail "the avout tool was not installed"
  "$prefix/bin/avout" --help >/dev/null || fail "installed bin/avout --help failed"
fi
# The package must not point back into the build or source tree (it must be relocatable).
if grep -rlF -e "$build" -e "$source_root" "$(dirname "$config")" "$pc"; then
  fail "installed package files name the build or source tree"
fi

expected_lines=(
  'options: hosts=127.0.0.1:2181 root=/install-check max_history=10'
  'value: {"a": [1, 2, 3], "b": []}'
  'install check OK'
)
check_output() {  # check_output NAME BINARY
  local output
  output=$("$2") || fail "$1: the binary exited with status $?"
  printf '%s\n' "$output" | sed "s/^/  [$1] /"
  for line in "${expected_lines[@]}"; do
    grep -qF -- "$line" <<<"$output" || fail "$1: expected the line '$line'"
  done
}

echo "== find_package(avout) from an outside project"
cmake -S "$project" -B "$work/cmake-build" \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log" >&2; fail "configuring the outside project failed"; }
grep -F "avout 0.1" "$work/configure.log" | grep -qF "$prefix/" ||
  { cat "$work/configure.log" >&2; fail "find_package did not find avout in $prefix"; }
cmake --build "$work/cmake-build" >"$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; fail "building the outside project failed"; }
check_output cmake "$work/cmake-build/avout_install_check"

echo "== pkg-config --cflags --libs avout"
pc_dir=$(dirname "$pc")
export PKG_CONFIG_PATH="$pc_dir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pkg_flags=$(pkg-config --cflags --libs avout) || fail "pkg-config --cflags --libs avout failed"
echo "  $pkg_flags"
[ "$(pkg-config --modversion avout)" = "$(sed -n 's/^Version: //p' "$pc")" ] || fail "pkg-config --modversion"
# shellcheck disable=SC2086  # the flags are words
"$cxx" -std=c++20 -Wall -Wextra -Wpedantic -Werror $flags "$project/main.cpp" -o "$work/pkg-config-check" \
  $pkg_flags || fail "compiling with pkg-config's flags failed"
check_output pkg-config "$work/pkg-config-check"

echo "install check passed"
