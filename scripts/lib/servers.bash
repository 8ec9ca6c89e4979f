# Throwaway ZooKeeper, Redis and PostgreSQL servers on loopback, for scripts/demo (sourced).
#
#   servers_dir=DIR            where their data and logs go (the caller removes it)
#   start_zookeeper            sets zookeeper=127.0.0.1:PORT
#   start_redis                sets redis=redis://127.0.0.1:PORT
#   start_postgres             sets postgres=postgresql://avout@127.0.0.1:PORT/postgres
#   stop_servers               stops and reaps every server started here
#
# Each server gets a port below the kernel's ephemeral range, and is started again on another
# one when it exits before answering: a port found free can still be taken before the server
# binds it. A server that neither answers nor exits within 60 s fails the start, its log shown.

servers=()  # "signal pid" of each server started here

# How many ports a server may try before its start fails.
server_port_attempts=8

# A loopback port nothing listens on, below the ephemeral range (whose ports the kernel gives
# to outgoing connections, so one free when checked may be a connection's local end when the
# server binds it).
free_port() {
  local low=10000 high ephemeral_low port
  read -r ephemeral_low _ </proc/sys/net/ipv4/ip_local_port_range
  high=$((ephemeral_low - 1))
  if [ "$high" -lt $((low + 1000)) ]; then high=59999; fi  # an unusual range: the retries cover it
  for _ in $(seq 100); do
    port=$((low + (RANDOM * 32768 + RANDOM) % (high - low + 1)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
  echo "${0##*/}: no free port found between $low and $high" >&2
  return 1
}

# answers PORT REQUEST EXPECTED: the server on PORT answers REQUEST with a line starting EXPECTED.
answers() {
  (
    exec 3<>"/dev/tcp/127.0.0.1/$1"
    printf '%b' "$2" >&3
    reply=""
    IFS= read -r -t 2 reply <&3 || [ -n "$reply" ]
    [[ $reply == "$3"* ]]
  )
}

# start_server WHAT SIGNAL LAUNCH READY: runs `LAUNCH PORT` in the background, its output to a
# log in servers_dir (it must exec the server, whose pid is then known), until `READY PORT`
# succeeds; sets started_port. SIGNAL stops the server.
start_server() {
  local what=$1 signal=$2 launch=$3 ready=$4 attempt port log pid status
  for attempt in $(seq "$server_port_attempts"); do
    port=$(free_port) || return 1
    log="$servers_dir/$what-$port.log"
    "$launch" "$port" >"$log" 2>&1 &
    pid=$!
    servers+=("$signal $pid")
    for _ in $(seq 300); do
      if "$ready" "$port" 2>/dev/null; then
        started_port=$port
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "${0##*/}: $what did not answer on port $port within 60 s; its log:" >&2
      tail -20 "$log" >&2
      return 1
    fi
    status=0
    wait "$pid" || status=$?
    echo "${0##*/}: $what exited (status $status) before answering on port $port (attempt $attempt):" >&2
    grep -m 3 -i -E 'bind|address already in use' "$log" >&2 || tail -3 "$log" >&2
  done
  echo "${0##*/}: $what did not start on any of $server_port_attempts ports; the last log:" >&2
  tail -20 "$log" >&2
  return 1
}

stop_servers() {
  local server
  # Each server is stopped and reaped; how a stopped server exits is not the caller's result.
  # (SIGINT would not do for all: background jobs of a script start with SIGINT ignored, and
  # the JVM keeps it so. PostgreSQL's fast shutdown is its SIGINT, which it handles itself.)
  for server in "${servers[@]}"; do kill -s "${server% *}" "${server#* }" 2>/dev/null || true; done
  for server in "${servers[@]}"; do wait "${server#* }" 2>/dev/null || true; done
  servers=()
}

# ---- ZooKeeper ------------------------------------------------------------------------------

launch_zookeeper() {  # PORT
  mkdir -p "$servers_dir/zookeeper"
  cat >"$servers_dir/zookeeper/zoo.cfg" <<CFG
tickTime=500
dataDir=$servers_dir/zookeeper
clientPort=$1
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
CFG
  # ZooKeeper's jar names its own dependencies; slf4j-simple, the one logging binding on the
  # class path, puts its warnings and errors (a port it cannot bind) in the log.
  exec java -Xmx256m -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$servers_dir/zookeeper/zoo.cfg"
}

zookeeper_ready() { answers "$1" 'ruok' imok; }

start_zookeeper() {
  start_server ZooKeeper TERM launch_zookeeper zookeeper_ready || return 1
  zookeeper=127.0.0.1:$started_port
}

# ---- Redis ----------------------------------------------------------------------------------

launch_redis() {  # PORT
  exec redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no --dir "$servers_dir" \
    --daemonize no
}

redis_ready() { answers "$1" 'PING\r\n' +PONG; }

start_redis() {
  start_server Redis TERM launch_redis redis_ready || return 1
  redis=redis://127.0.0.1:$started_port
}

# ---- PostgreSQL -----------------------------------------------------------------------------

postgres_bin=""
postgres_as_owner=()

launch_postgres() {  # PORT
  exec "${postgres_as_owner[@]}" "$postgres_bin/postgres" -D "$servers_dir/postgres" -p "$1" \
    -k "$servers_dir" -c listen_addresses=127.0.0.1 -c fsync=off
}

postgres_ready() { "$postgres_bin/pg_isready" -q -h 127.0.0.1 -p "$1"; }

start_postgres() {
  postgres_bin=$(find /usr/lib/postgresql -maxdepth 2 -name bin -type d | sort -V | tail -1)
  postgres_as_owner=()
  if [ "$(id -u)" -eq 0 ]; then  # initdb refuses to run as root
    chown postgres: "$servers_dir"
    postgres_as_owner=(setpriv --reuid=postgres --regid=postgres --init-groups --)
  fi
  "${postgres_as_owner[@]}" "$postgres_bin/initdb" -D "$servers_dir/postgres" -A trust -U avout \
    --no-sync >"$servers_dir/initdb.log" 2>&1 || { cat "$servers_dir/initdb.log" >&2; return 1; }
  # SIGINT is PostgreSQL's fast shutdown.
  start_server PostgreSQL INT launch_postgres postgres_ready || return 1
  postgres=postgresql://avout@127.0.0.1:$started_port/postgres
}
