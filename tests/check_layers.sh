#!/usr/bin/env bash
# The layering rules of docs/architecture.md, checked on the source tree:
#   1. a backend (backends/NAME) includes no other backend's header, public or private;
#   2. the core (core/) includes no backend's header;
#   3. an installed public header (core/include, backends/*/include) includes only other
#      public headers (<avout/...> that exist there) and outside libraries, never a private
#      (src/) header;
#   4. the store interface a third party implements (core/include/avout/backend.hpp) names
#      no ZooKeeper type or header outside its comments;
#   5. every source file of core/src sits in a folder of the table below, includes the private
#      headers of the folders its row names (by folder-qualified path), and no other;
#      backends/zookeeper, compiled into the core, has a row too; no other backend includes a
#      private header of the core;
#   6. only core/src/zk includes the ZooKeeper C client's header;
#   7. no file in core/src is longer than 600 lines.
# Run by ctest (tests layering_check and layering_check_self_test, label fast); by hand:
#   tests/check_layers.sh SOURCE_ROOT     exits 0 when every rule holds, else 1 naming each break
#   tests/check_layers.sh --self-test     checks that a tree with each break is caught
set -euo pipefail

# What each folder of core/src may include of the others: a folder name allows all of its
# headers, a path allows that header alone. Lower layers first; a folder never includes one
# beside or above it.
declare -A may_include=(
  [base]=""
  [zk]="base"
  [records]="base"
  [runtime]="base zk records"
  [queue]="base zk records"
  [stm]="base zk records runtime"
  [atoms]="base zk records runtime"
  [agents]="base zk records runtime queue stm/participant.hpp"
  [locks]="base zk records runtime queue stm/participant.hpp"
  [recipes]="base zk records runtime queue stm/participant.hpp"
  [client]="base zk records runtime queue stm atoms agents locks recipes"
  [backends/zookeeper]="base zk records runtime"
)
max_lines=600

# Prints "file:line:quote:target" for every #include of the given files (quote: < or ").
includes_of() {
  [ $# -gt 0 ] || return 0
  awk '/^[ \t]*#[ \t]*include[ \t]*[<"]/ {
    match($0, /[<"][^>"]+[>"]/)
    print FILENAME ":" FNR ":" substr($0, RSTART, 1) ":" substr($0, RSTART + 1, RLENGTH - 2)
  }' "$@"
}

check_tree() {
  local root=$1 broken=0 backend other file line quote target header
  cd "$root"
  local backends=()
  for backend in backends/*/; do backends+=("$(basename "$backend")"); done

  # What each backend owns: its public header paths and its private header names.
  declare -A owner_of_public owner_of_private
  for backend in "${backends[@]}"; do
    if [ -d "backends/$backend/include" ]; then
      while IFS= read -r header; do owner_of_public[$header]=$backend; done \
        < <(cd "backends/$backend/include" && find . -name '*.h*' | sed 's|^\./||')
    fi
    while IFS= read -r header; do owner_of_private[${header##*/}]=$backend; done \
      < <(find "backends/$backend" -path '*/src/*' -name '*.h*')
  done
  declare -A private_header public_header
  while IFS= read -r header; do private_header[${header##*/}]=1; done \
    < <(find core backends -path '*/src/*' -name '*.h*')
  while IFS= read -r header; do public_header[$header]=1; done \
    < <(for dir in core/include backends/*/include; do [ -d "$dir" ] && (cd "$dir" && find . -name '*.h*' | sed 's|^\./||'); done)

  report() { echo "layering: $1" >&2; broken=1; }
  backend_of_include() {  # sets `other` to the backend `target` names, or empty
    other=${owner_of_public[$target]:-${owner_of_private[${target##*/}]:-}}
  }

  # Rule 1.
  for backend in "${backends[@]}"; do
    while IFS=: read -r file line quote target; do
      backend_of_include
      if [ -n "$other" ] && [ "$other" != "$backend" ]; then
        report "$file:$line: backend $backend includes backend $other's header $target"
      fi
    done < <(includes_of $(find "backends/$backend" -name '*.cpp' -o -name '*.h*'))
  done
  # Rule 2.
  while IFS=: read -r file line quote target; do
    backend_of_include
    [ -z "$other" ] || report "$file:$line: the core includes backend $other's header $target"
  done < <(includes_of $(find core -name '*.cpp' -o -name '*.h*'))
  # Rule 3.
  while IFS=: read -r file line quote target; do
    if [ -n "${private_header[${target##*/}]:-}" ] && [ -z "${public_header[$target]:-}" ]; then
      report "$file:$line: public header includes the private header $target"
    elif [[ $target == avout/* ]] && [ -z "${public_header[$target]:-}" ]; then
      report "$file:$line: public header includes $target, which is not a public header"
    elif [ "$quote" = '"' ]; then
      report "$file:$line: public header includes \"$target\" (public headers include <avout/...>)"
    fi
  done < <(includes_of $(find core/include backends/*/include -name '*.h*' 2>/dev/null))
  # Rule 4.
  local interface=core/include/avout/backend.hpp
  if [ -f "$interface" ]; then
    while IFS=: read -r line text; do
      report "$interface:$line: the store interface names ZooKeeper: $text"
    done < <(sed 's|//.*||' "$interface" | grep -niE 'zookeeper|op::' || true)
  fi
  # Rules 5-7.
  local folder allowed ok entry
  while IFS= read -r file; do
    report "$file: a source file directly in core/src (each sits in its layer's folder)"
  done < <(find core/src -maxdepth 1 -type f \( -name '*.cpp' -o -name '*.h*' \) 2>/dev/null)
  while IFS= read -r file; do
    if [[ $file == backends/zookeeper/* ]]; then
      folder=backends/zookeeper
    else
      folder=${file#core/src/}
      folder=${folder%%/*}
      if [ -z "${may_include[$folder]+set}" ]; then
        report "$file: core/src/$folder is not a folder of the layer table"
        continue
      fi
      if [ "$(wc -l <"$file")" -gt "$max_lines" ]; then
        report "$file: $(wc -l <"$file") lines, more than $max_lines (split it by job)"
      fi
    fi
    allowed=${may_include[$folder]}
    while IFS=: read -r _ line quote target; do
      if [[ $target == zookeeper/zookeeper.h ]] && [ "$folder" != zk ]; then
        report "$file:$line: only core/src/zk includes the ZooKeeper C client's header"
      fi
      [ "$quote" = '"' ] || continue
      entry=${target%%/*}
      if [ "$entry" = "$target" ]; then
        # An unqualified name: a header beside the file in backends/zookeeper/src, or a core
        # header named without its folder.
        if ! { [ "$folder" = backends/zookeeper ] && [ -f "backends/zookeeper/src/$target" ]; }; then
          report "$file:$line: includes \"$target\" without its folder (write \"FOLDER/$target\")"
        fi
        continue
      fi
      [ -n "${may_include[$entry]+set}" ] || continue  # not a core/src folder
      [ "$entry" = "$folder" ] && continue
      ok=0
      for permitted in $allowed; do
        if [ "$permitted" = "$entry" ] || [ "$permitted" = "$target" ]; then ok=1; fi
      done
      [ "$ok" = 1 ] || report "$file:$line: $folder includes \"$target\" ($folder may include: ${allowed:-nothing of core/src})"
    done < <(includes_of "$file")
  done < <(find core/src backends/zookeeper -type f \( -name '*.cpp' -o -name '*.h*' \) 2>/dev/null | sort)
  # Other backends reach the core through its public headers only.
  for backend in "${backends[@]}"; do
    [ "$backend" = zookeeper ] && continue
    while IFS=: read -r file line quote target; do
      entry=${target%%/*}
      if [ "$quote" = '"' ] && [ "$entry" != "$target" ] && [ -n "${may_include[$entry]+set}" ]; then
        report "$file:$line: backend $backend includes the core's private header $target"
      fi
    done < <(includes_of $(find "backends/$backend" -name '*.cpp' -o -name '*.h*'))
  done
  return $broken
}

tree=""  # the self-test's temporary tree (global: the EXIT trap reads it)
self_test() {
  local output
  tree=$(mktemp -d "${TMPDIR:-/tmp}/avout-layers.XXXXXX")
  trap 'rm -rf "$tree"' EXIT
  mkdir -p "$tree"/core/{include/avout,src/{base,zk,runtime,stm,agents}} "$tree"/backends/{one,two,zookeeper}/{include/avout,src}
  printf '#pragma once\n#include <avout/base.hpp>\n#include <string>\n' >"$tree/core/include/avout/api.hpp"
  printf '#pragma once\n' >"$tree/core/include/avout/base.hpp"
  printf '#pragma once\n// Stores; ZooKeeper coordinates.\nclass Store;\n' >"$tree/core/include/avout/backend.hpp"
  printf '#pragma once\n' >"$tree/core/src/base/engine.hpp"
  printf '#include "base/engine.hpp"\n#include <avout/api.hpp>\n' >"$tree/core/src/base/engine.cpp"
  printf '#pragma once\n#include <zookeeper/zookeeper.h>\n' >"$tree/core/src/zk/handle.hpp"
  printf '#pragma once\n#include "zk/handle.hpp"\n' >"$tree/core/src/runtime/runtime.hpp"
  printf '#pragma once\n' >"$tree/core/src/stm/participant.hpp"
  printf '#pragma once\n#include "runtime/runtime.hpp"\n' >"$tree/core/src/stm/stm.hpp"
  printf '#include "stm/participant.hpp"\n#include "runtime/runtime.hpp"\n' >"$tree/core/src/agents/agent.cpp"
  printf '#pragma once\n' >"$tree/backends/zookeeper/src/lease.hpp"
  printf '#include "lease.hpp"\n#include "runtime/runtime.hpp"\n' >"$tree/backends/zookeeper/src/store.cpp"
  printf '#pragma once\n#include <avout/api.hpp>\n' >"$tree/backends/one/include/avout/one.hpp"
  printf '#pragma once\n' >"$tree/backends/one/src/one_wire.hpp"
  printf '#include "one_wire.hpp"\n#include <avout/one.hpp>\n' >"$tree/backends/one/src/one.cpp"
  printf '#pragma once\n#include <avout/api.hpp>\n' >"$tree/backends/two/include/avout/two.hpp"
  printf '#include <avout/two.hpp>\n' >"$tree/backends/two/src/two.cpp"
  (check_tree "$tree") || { echo "self-test: a clean tree was refused" >&2; exit 1; }

  printf '#include <avout/one.hpp>\n#include "one_wire.hpp"\n' >>"$tree/backends/two/src/two.cpp"
  printf '#include <avout/two.hpp>\n' >>"$tree/core/src/base/engine.cpp"
  printf '#include "stm/stm.hpp"\n#include "engine.hpp"\n' >>"$tree/core/src/agents/agent.cpp"
  printf '#include "stm/stm.hpp"\n' >>"$tree/core/src/runtime/runtime.hpp"
  printf '#include "stm/stm.hpp"\n' >>"$tree/backends/zookeeper/src/store.cpp"
  printf '#include "runtime/runtime.hpp"\n' >>"$tree/backends/one/src/one.cpp"
  printf '#include <zookeeper/zookeeper.h>\n' >>"$tree/core/src/stm/stm.hpp"
  printf '#pragma once\n' >"$tree/core/src/flat.hpp"
  mkdir "$tree/core/src/misc"
  printf '#pragma once\n' >"$tree/core/src/misc/x.hpp"
  seq 601 | sed 's|^|// |' >"$tree/core/src/base/long.cpp"
  printf '#include <engine.hpp>\n#include "base.hpp"\n#include <avout/gone.hpp>\n' >>"$tree/core/include/avout/api.hpp"
  printf 'std::optional<op::Create> commit_operation();\n' >>"$tree/core/include/avout/backend.hpp"
  if output=$(check_tree "$tree" 2>&1); then echo "self-test: a broken tree passed" >&2; exit 1; fi
  local expected
  for expected in "backend two includes backend one's header avout/one.hpp" \
                  "backend two includes backend one's header one_wire.hpp" \
                  "the core includes backend two's header avout/two.hpp" \
                  "public header includes the private header engine.hpp" \
                  'agents includes "stm/stm.hpp"' \
                  'includes "engine.hpp" without its folder' \
                  'runtime includes "stm/stm.hpp"' \
                  'backends/zookeeper includes "stm/stm.hpp"' \
                  "backend one includes the core's private header runtime/runtime.hpp" \
                  "core/src/stm/stm.hpp:3: only core/src/zk includes the ZooKeeper C client's header" \
                  "core/src/flat.hpp: a source file directly in core/src" \
                  "core/src/misc is not a folder of the layer table" \
                  "long.cpp: 601 lines, more than 600" \
                  'public header includes "base.hpp"' \
                  "avout/gone.hpp, which is not a public header" \
                  "the store interface names ZooKeeper: std::optional<op::Create>"; do
    grep -qF -- "$expected" <<<"$output" || { echo "self-test: not reported: $expected" >&2; echo "$output" >&2; exit 1; }
  done
  echo "layering self-test OK"
}

if [ "${1:-}" = --self-test ]; then
  self_test
elif [ $# -eq 1 ]; then
  check_tree "$1" && echo "layering OK"
else
  echo "usage: $0 SOURCE_ROOT | --self-test" >&2
  exit 2
fi
