#!/usr/bin/env bash
# Installs an avout build tree into a temporary prefix, then builds tests/install/project
# against it: with find_package(avout ... COMPONENTS zookeeper redis postgres), with
# `pkg-config --cflags --libs avout-redis avout-postgres`, and a ZooKeeper-only program with
# `pkg-config avout` alone; runs each binary and checks what it prints. With other-kind, it
# then builds avout's libraries of the other kind (shared for a static build tree, static
# for a shared one) from the same sources and checks that installation the same way. Shared
# libraries must carry their SONAME and export only the public API (what the installed headers
# mark AVOUT_API), and errors thrown inside them must be caught by type in the programs.
# Run by ctest in the plain build (test install_check, label fast); by hand:
#   tests/install/check.sh BUILD_DIR tests/install/project [CXX_COMPILER] [EXTRA_FLAGS] [with-tool] [other-kind]
# EXTRA_FLAGS (a sanitizer build tree, checked by hand) go to compiling and linking the outside
# project, which must be instrumented like the libraries it links; with-tool:
# the build has the `avout` command line, which must be installed too.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR PROJECT_DIR [CXX_COMPILER] [EXTRA_FLAGS] [with-tool] [other-kind]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
project=$(cd "$2" && pwd)
cxx=${3:-c++}
flags=${4:-}
tool=${5:-no-tool}
other_kind=${6:-}
source_root=$(cd "$project/../../.." && pwd)

fail() {
  echo "install check FAILED: $*" >&2
  exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/avout-install-check.XXXXXX")
trap 'rm -rf "$work"' EXIT

# What every program prints (main.cpp and core_only.cpp), then what main.cpp alone prints. An
# error caught by its type shows the library exports the error classes' typeinfo.
core_lines=(
  'caught by type: avout::InvalidName from avout::Client'
  'caught by type: avout::InvalidDuration from avout::Client'
  'caught by type: avout::Error from avout::validate_path'
  'install check OK'
)
expected_lines=(
  "${core_lines[@]}"
  'options: hosts=127.0.0.1:2181 root=/install-check max_history=10'
  'value: {"a": [1, 2, 3], "b": []}'
  'schemes: postgres postgresql redis rediss tcp unix zookeeper'
  'caught by type: avout::InvalidName from avout::redis::Store'
  'caught by type: avout::InvalidName from avout::postgres::Store'
)
check_output() {  # check_output NAME BINARY
  local output line lines=("${expected_lines[@]}")
  [[ $1 == *"core only" ]] && lines=("${core_lines[@]}")
  output=$("$2") || fail "$1: the binary exited with status $?"
  printf '%s\n' "$output" | sed "s/^/  [$1] /"
  for line in "${lines[@]}"; do
    grep -qF -- "$line" <<<"$output" || fail "$1: expected the line '$line'"
  done
}

# The names the installed headers mark AVOUT_API: classes, and functions (the last word before
# the first parenthesis of a declaration that starts with AVOUT_API).
marked_names() {  # marked_names PREFIX
  grep -rhE 'AVOUT_API' "$1/include/avout" |
    sed -nE -e 's/.*(class|struct) AVOUT_API ([A-Za-z_0-9]+).*/\2/p' \
      -e 's/^AVOUT_API ([^(]*)\(.*/\1/p' | grep -oE '[A-Za-z_][A-Za-z_0-9]*$' | sort -u
}

# The avout entity a demangled symbol belongs to: "avout::inspect::names(...)" -> names,
# "typeinfo for avout::Error" -> Error, "avout::detail::ReplyDeadline::current()" ->
# ReplyDeadline; nothing for a symbol outside avout (a std:: template instantiated with an
# avout type is std's).
avout_entities() {
  sed -E 's/^[0-9a-f]* *[A-Za-z] //; s/^(typeinfo name for|typeinfo for|vtable for|VTT for|guard variable for) //' |
    sed -nE 's/^avout::((detail|inspect|codec|op|zookeeper|redis|postgres)::)*([A-Za-z_][A-Za-z_0-9]*).*/\3/p'
}

check_exports() {  # check_exports PREFIX: shared libraries export only the public API
  local prefix=$1 marked library path symbols exported defined stray internal
  marked=$(marked_names "$prefix")
  [ "$(wc -l <<<"$marked")" -gt 40 ] || fail "found only $(wc -l <<<"$marked") AVOUT_API names in include/avout"
  for library in avout_core avout_redis avout_postgres; do
    path=$(find "$prefix" -name "lib$library.so" | head -1)
    [ -n "$path" ] || fail "lib$library.so not installed"
    symbols=$work/$library.symbols
    nm -D --defined-only -C "$path" >"$symbols.exported" || fail "nm -D lib$library.so failed"
    nm --defined-only -C "$path" >"$symbols.defined" || fail "nm lib$library.so failed"
    # Every exported avout symbol belongs to a class or function a public header marks.
    stray=$(avout_entities <"$symbols.exported" | sort -u | grep -vxF -f <(printf '%s\n' "$marked") || true)
    [ -z "$stray" ] ||
      fail "lib$library.so exports symbols of what no public header marks AVOUT_API: $(echo $stray)"
    exported=$(grep -c ' avout::' "$symbols.exported" || true)
    defined=$(grep -c ' avout::' "$symbols.defined" || true)
    echo "  lib$library.so exports $exported of its $defined avout symbols"
  done
  # The core's internals stay inside: far fewer exported symbols than defined ones, and none
  # of known engine classes (which the library does define: the check looks at the right names).
  symbols=$work/avout_core.symbols
  exported=$(grep -c ' avout::' "$symbols.exported" || true)
  defined=$(grep -c ' avout::' "$symbols.defined" || true)
  [ $((exported * 4)) -lt "$defined" ] ||
    fail "libavout_core.so exports $exported of its $defined avout symbols: internals are not hidden"
  for internal in 'avout::detail::StmContext::' 'avout::detail::SequentialQueue::' 'avout::detail::Runtime::'; do
    grep -qF " $internal" "$symbols.defined" ||
      fail "libavout_core.so defines no $internal symbol: the check looks for the wrong name"
    grep -qF " $internal" "$symbols.exported" && fail "libavout_core.so exports $internal"
  done
  # Every error class's typeinfo is exported wherever a library defines it, and some library
  # does: a catch by type in a program then matches the library's throw whatever the C++
  # runtime compares (the typeinfo's address or its name).
  local error errors=0
  while IFS= read -r error; do
    errors=$((errors + 1))
    grep -qx "[0-9a-f]* [A-Za-z] typeinfo for avout::$error" "$work"/avout_*.symbols.exported ||
      fail "no library exports the typeinfo of avout::$error"
    for symbols in "$work"/avout_*.symbols.defined; do
      if grep -qx "[0-9a-f]* [A-Za-z] typeinfo for avout::$error" "$symbols" &&
        ! grep -qx "[0-9a-f]* [A-Za-z] typeinfo for avout::$error" "${symbols%.defined}.exported"; then
        fail "$(basename "${symbols%.symbols.defined}") hides the typeinfo of avout::$error"
      fi
    done
  done < <(sed -nE 's/^class AVOUT_API ([A-Za-z]+) : public .*/\1/p' "$prefix/include/avout/errors.hpp")
  [ "$errors" -gt 20 ] || fail "found only $errors error classes in the installed errors.hpp"
  echo "  exports: only what the public headers mark AVOUT_API, the typeinfo of all $errors errors"
}

library_kind() {  # library_kind BUILD_DIR: static or shared
  if grep -q '^BUILD_SHARED_LIBS:[A-Z]*=ON' "$1/CMakeCache.txt"; then echo shared; else echo static; fi
}

check_install() {  # check_install BUILD_DIR: install it and build the outside project against it
  local build=$1 kind suffix prefix config pc pc_dir headers installed include header component
  local module run_path pkg_flags core_flags
  kind=$(library_kind "$build")
  suffix=a
  [ "$kind" = shared ] && suffix=so
  prefix=$work/$kind-prefix
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
  for library in avout_core avout_redis avout_postgres; do
    find "$prefix" -name "lib$library.$suffix" | grep -q . ||
      fail "library lib$library.$suffix not installed"
  done
  config=$(find "$prefix" -name avoutConfig.cmake)
  [ -n "$config" ] || fail "avoutConfig.cmake not installed"
  [ -f "$(dirname "$config")/avoutConfigVersion.cmake" ] || fail "avoutConfigVersion.cmake not installed"
  pc=$(find "$prefix" -name avout.pc)
  [ -n "$pc" ] || fail "avout.pc not installed"
  for component in redis postgres; do
    [ -f "$(dirname "$pc")/avout-$component.pc" ] || fail "avout-$component.pc not installed"
  done
  if [ "$tool" = with-tool ]; then
    [ -x "$prefix/bin/avout" ] || fail "the avout tool was not installed"
    "$prefix/bin/avout" --help >/dev/null || fail "installed bin/avout --help failed"
  fi
  # Shared libraries carry the SONAME of their version: .so.0.MINOR while it is 0.x, then .so.MAJOR.
  if [ "$kind" = shared ]; then
    local version soversion soname
    version=$(sed -n 's/^#define AVOUT_VERSION_STRING "\(.*\)"$/\1/p' "$prefix/include/avout/version.hpp")
    [ -n "$version" ] || fail "no AVOUT_VERSION_STRING in the installed <avout/version.hpp>"
    soversion=${version%.*}
    [ "${version%%.*}" = 0 ] || soversion=${version%%.*}
    for library in avout_core avout_redis avout_postgres; do
      soname=$(readelf -d "$(find "$prefix" -name "lib$library.so")" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
      [ "$soname" = "lib$library.so.$soversion" ] ||
        fail "lib$library.so has SONAME '$soname', not lib$library.so.$soversion"
      find "$prefix" -name "lib$library.so.$version" -type f | grep -q . ||
        fail "lib$library.so.$version not installed"
    done
    echo "  SONAMEs: lib{avout_core,avout_redis,avout_postgres}.so.$soversion"
    check_exports "$prefix"
  fi
  # No public header includes Boost: the package must not make consumers find it.
  grep -qi boost "$(dirname "$config")"/*.cmake && fail "the CMake package asks for Boost"
  # The package must not point back into the build or source tree (it must be relocatable).
  if grep -rlF -e "$build" -e "$source_root" "$(dirname "$config")" "$(dirname "$pc")"; then
    fail "installed package files name the build or source tree"
  fi


  echo "== find_package(avout) from an outside project ($kind)"
  cmake -S "$project" -B "$work/$kind-cmake-build" \
    -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$work/$kind-configure.log" 2>&1 ||
    { cat "$work/$kind-configure.log" >&2; fail "configuring the outside project failed"; }
  grep -F "avout 0.1" "$work/$kind-configure.log" | grep -qF "$prefix/" ||
    { cat "$work/$kind-configure.log" >&2; fail "find_package did not find avout in $prefix"; }
  cmake --build "$work/$kind-cmake-build" >"$work/$kind-build.log" 2>&1 ||
    { cat "$work/$kind-build.log" >&2; fail "building the outside project failed"; }
  check_output "$kind cmake" "$work/$kind-cmake-build/avout_install_check"

  echo "== pkg-config ($kind)"
  pc_dir=$(dirname "$pc")
  export PKG_CONFIG_PATH="$pc_dir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  for module in avout avout-redis avout-postgres; do
    [ "$(pkg-config --modversion "$module")" = "$(sed -n 's/^Version: //p' "$pc")" ] ||
      fail "pkg-config --modversion $module"
  done
  # The core's file asks for neither store's client library.
  if pkg-config --print-requires --print-requires-private avout | grep -Eq 'hiredis|pqxx'; then
    fail "avout.pc requires hiredis or libpqxx"
  fi
  pkg-config --libs avout | grep -Eq 'hiredis|pqxx' && fail "pkg-config --libs avout names hiredis or libpqxx"
  # A shared build's programs find the libraries through the loader's path; a static one's
  # must not need them at run time.
  run_path=""
  [ "$kind" = shared ] && run_path="$prefix/lib:$(pkg-config --variable=libdir avout)"
  pkg_flags=$(pkg-config --cflags --libs avout-redis avout-postgres) ||
    fail "pkg-config --cflags --libs avout-redis avout-postgres failed"
  echo "  $pkg_flags"
  # shellcheck disable=SC2086  # the flags are words
  "$cxx" -std=c++20 -Wall -Wextra -Wpedantic -Werror $flags "$project/main.cpp" \
    -o "$work/$kind-pkg-config-check" $pkg_flags || fail "compiling with pkg-config's flags failed"
  LD_LIBRARY_PATH=$run_path check_output "$kind pkg-config" "$work/$kind-pkg-config-check"
  core_flags=$(pkg-config --cflags --libs avout) || fail "pkg-config --cflags --libs avout failed"
  echo "  $core_flags"
  # shellcheck disable=SC2086
  "$cxx" -std=c++20 -Wall -Wextra -Wpedantic -Werror $flags "$project/core_only.cpp" \
    -o "$work/$kind-core-only" $core_flags || fail "compiling with pkg-config avout alone failed"
  LD_LIBRARY_PATH=$run_path check_output "$kind core only" "$work/$kind-core-only"
}

check_install "$build"

if [ "$other_kind" = other-kind ]; then
  # The same sources, the same compiler (and launcher), libraries of the other kind; build
  # type None (no optimization, no debug information) compiles fastest: this checks linking.
  shared=ON
  [ "$(library_kind "$build")" = shared ] && shared=OFF
  launcher=$(sed -n 's/^CMAKE_CXX_COMPILER_LAUNCHER:[A-Z]*=//p' "$build/CMakeCache.txt")
  other=$work/other-build
  echo "== building avout with BUILD_SHARED_LIBS=$shared"
  cmake -S "$source_root" -B "$other" -DBUILD_SHARED_LIBS=$shared -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" -DCMAKE_BUILD_TYPE=None \
    -DAVOUT_BUILD_TESTS=OFF -DAVOUT_BUILD_BENCH=OFF -DAVOUT_WERROR=ON \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" \
    >"$work/other-configure.log" 2>&1 || { cat "$work/other-configure.log" >&2; fail "configuring it failed"; }
  targets=(avout_core avout_redis avout_postgres)
  [ "$tool" = with-tool ] && targets+=(avout)  # installed with the libraries
  cmake --build "$other" -j "$(nproc)" --target "${targets[@]}" >"$work/other-build.log" 2>&1 ||
    { tail -50 "$work/other-build.log" >&2; fail "building it failed"; }
  check_install "$other"
fi

echo "install check passed"
