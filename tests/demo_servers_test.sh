#!/usr/bin/env bash
# The throwaway servers of scripts/demo (scripts/lib/servers.bash), on real servers:
#   1. free_port offers only ports below the kernel's ephemeral range, which outgoing
#      connections cannot hold;
#   2. a server whose port is taken between the check and its bind (held by hold_ports as a
#      connection's local end holds it) is started again on another port, and answers;
#   3. stop_servers leaves none of them answering.
# Run by ctest (label fast): demo_servers_test.sh SOURCE_ROOT HOLD_PORTS
set -euo pipefail
root=$1
hold_ports=$2

servers_dir=$(mktemp -d "${TMPDIR:-/tmp}/avout-demo-servers-test.XXXXXX")
holder=""
cleanup() {
  local status=$?
  stop_servers
  if [ -n "$holder" ]; then exec {holder_in}>&-; wait "$holder" || true; fi
  rm -rf "$servers_dir"
  exit "$status"
}
trap cleanup EXIT
source "$root/scripts/lib/servers.bash"

fail() {
  echo "FAILED: $*" >&2
  exit 1
}

# 1. Below the ephemeral range.
read -r ephemeral_low _ </proc/sys/net/ipv4/ip_local_port_range
for _ in $(seq 50); do
  port=$(free_port)
  [ "$port" -lt "$ephemeral_low" ] || fail "free_port offered $port, in the ephemeral range from $ephemeral_low"
done

# 2. Every server's first port is taken after the check: a free port, held without listening.
held=$(free_port)
coproc HOLDER { "$hold_ports" "$held"; }
holder=$HOLDER_PID
holder_in=${HOLDER[1]}
read -r answer <&"${HOLDER[0]}"
[ "$answer" = "held 1" ] || fail "hold_ports could not hold port $held: $answer"

eval "$(declare -f free_port | sed '1s/^free_port/checked_free_port/')"
free_port() {  # the held port first, for each server
  if [ -e "$servers_dir/offer-held" ]; then
    rm "$servers_dir/offer-held"
    echo "$held"
  else
    checked_free_port
  fi
}

for server in zookeeper redis postgres; do
  touch "$servers_dir/offer-held"
  "start_$server" 2>"$servers_dir/$server.err" || {
    cat "$servers_dir/$server.err" >&2
    fail "start_$server failed"
  }
  grep -q "before answering on port $held" "$servers_dir/$server.err" ||
    fail "start_$server never tried the held port $held: $(cat "$servers_dir/$server.err")"
done
echo "started on other ports after the held $held: $zookeeper $redis $postgres"
zookeeper_ready "${zookeeper##*:}" || fail "ZooKeeper ($zookeeper) does not answer"
redis_ready "${redis##*:}" || fail "Redis ($redis) does not answer"
postgres_port=${postgres##*:}
postgres_port=${postgres_port%%/*}
postgres_ready "$postgres_port" || fail "PostgreSQL ($postgres) does not answer"

# 3. Stopped.
stop_servers
zookeeper_ready "${zookeeper##*:}" 2>/dev/null && fail "ZooKeeper still answers after stop_servers"
redis_ready "${redis##*:}" 2>/dev/null && fail "Redis still answers after stop_servers"
postgres_ready "$postgres_port" 2>/dev/null && fail "PostgreSQL still answers after stop_servers"
echo "passed"
