#!/usr/bin/env bash
# Starts, stops or checks a throwaway local 3-node RabbitMQ cluster (loopback only) for fault tests and experiments.
# It never touches the local broker on 5672 (scripts/services.sh): own node names, ports, data, cookie and config.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/rabbit-cluster.sh up|down|status|stop-node NODE|start-node NODE|ctl NODE ARGS... [--help]

  up              start one rabbitmq-server per port (nodes rc1@localhost, rc2@localhost, ... on 127.0.0.1), each
                  with its own data, log and config under RABBIT_CLUSTER_DIR and one Erlang cookie made for this
                  cluster; join the others to the first with 'rabbitmqctl join_cluster' and wait until every node
                  reports every node running. Does nothing when that cluster is already up.
  down            stop every node (rabbitmqctl stop, kill -9 of the node's own pid if it hangs) and delete
                  RABBIT_CLUSTER_DIR
  status          print each node's state and the running members it sees; exit 1 unless all run clustered
  stop-node NODE  stop one node (e.g. rc1): the other nodes keep running (a node loss in the fault suite)
  start-node NODE start a stopped node again; it rejoins the cluster with its data
  ctl NODE ARGS   rabbitmqctl ARGS against one node, with this cluster's cookie (e.g. ctl rc1 list_queues)

Environment:
  RABBIT_CLUSTER_PORTS  space-separated AMQP ports, one node each (default "5681 5682 5683"; at least 3).
                        Node i is rc<i>@localhost; its Erlang distribution port is its AMQP port + 20000.
  RABBIT_CLUSTER_NODE_PREFIX  node name prefix instead of "rc" (e.g. a test's unique prefix: node names are
                        host-wide in epmd, so two clusters at once need different ones)
  RABBIT_CLUSTER_DIR    working directory (default ${TMPDIR:-/tmp}/delay-relay-rabbit-cluster)
  RABBIT_CLUSTER_ERL_ARGS  extra Erlang VM flags (default "+S 1:1 +A 4 +sbwt none +sbwtdcpu none +sbwtdio none": one
                        scheduler that sleeps when idle instead of spinning, small nodes)
  RABBIT_CLUSTER_LOGS_TO   'down' first copies each node's logs to this directory (the fault test sets it)

The relay then needs only configuration:
  spring.rabbitmq.addresses=127.0.0.1:5681,127.0.0.1:5682,127.0.0.1:5683
USAGE
}

PORTS=${RABBIT_CLUSTER_PORTS:-"5681 5682 5683"}
PREFIX=${RABBIT_CLUSTER_NODE_PREFIX:-rc}
DIR=${RABBIT_CLUSTER_DIR:-${TMPDIR:-/tmp}/delay-relay-rabbit-cluster}
ERL_ARGS=${RABBIT_CLUSTER_ERL_ARGS:-"+S 1:1 +A 4 +sbwt none +sbwtdcpu none +sbwtdio none"}
HOST=127.0.0.1

# Debian's /usr/sbin/rabbitmq-server is a wrapper that switches to the rabbitmq user and its HOME (and so to the
# shared node's cookie); the scripts it wraps live in /usr/lib/rabbitmq/bin. Run those directly so that every node
# and every rabbitmqctl call of this cluster uses this cluster's own HOME and cookie.
bin_dir() {
  if [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
    echo /usr/lib/rabbitmq/bin
  elif command -v rabbitmq-server >/dev/null 2>&1; then
    dirname "$(command -v rabbitmq-server)"
  else
    echo "rabbit-cluster: 'rabbitmq-server' is not installed (apt-get install rabbitmq-server provides it and" \
      "rabbitmqctl; RabbitMQ 3.8+ with quorum queues is needed)" >&2
    exit 2
  fi
}

node_name() { # port -> rc<index>
  local port i=0
  for port in $PORTS; do
    i=$((i + 1))
    if [ "$port" = "$1" ]; then echo "$PREFIX$i"; return; fi
  done
  echo "rabbit-cluster: port $1 is not in RABBIT_CLUSTER_PORTS ($PORTS)" >&2
  exit 2
}

node_port() { # rc<index> -> port
  local port
  for port in $PORTS; do
    if [ "$(node_name "$port")" = "$1" ]; then echo "$port"; return; fi
  done
  echo "rabbit-cluster: no node '$1' (nodes: $(for p in $PORTS; do printf '%s ' "$(node_name "$p")"; done))" >&2
  exit 2
}

# Every variable a node or rabbitmqctl call reads, pointing at this node's own files. RABBITMQ_CONF_ENV_FILE and
# RABBITMQ_CONFIG_FILE replace /etc/rabbitmq/*, which describe the shared broker (its node name and port 5672).
node_env() { # node
  local node=$1 port
  port=$(node_port "$node")
  echo HOME="$DIR" \
    RABBITMQ_NODENAME="$node@localhost" \
    RABBITMQ_NODE_IP_ADDRESS="$HOST" \
    RABBITMQ_NODE_PORT="$port" \
    RABBITMQ_DIST_PORT="$((port + 20000))" \
    RABBITMQ_CONF_ENV_FILE="$DIR/$node/rabbitmq-env.conf" \
    RABBITMQ_CONFIG_FILE="$DIR/$node/rabbitmq.conf" \
    RABBITMQ_ADVANCED_CONFIG_FILE="$DIR/$node/advanced.config" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$DIR/$node/enabled_plugins" \
    RABBITMQ_MNESIA_BASE="$DIR/$node/mnesia" \
    RABBITMQ_LOG_BASE="$DIR/$node/log" \
    RABBITMQ_PID_FILE="$DIR/$node/rabbit.pid" \
    ERL_EPMD_ADDRESS="$HOST"
}

ctl() { # node args...
  local node=$1; shift
  if [ ! -f "$DIR/.erlang.cookie" ]; then
    # Without it the Erlang CLI would try to create a cookie in a missing HOME and leave an erl_crash.dump.
    echo "rabbit-cluster: no cluster in $DIR (run '$0 up')" >&2
    return 1
  fi
  # shellcheck disable=SC2046 # node_env prints NAME=value words without spaces
  env $(node_env "$node") "$(bin_dir)/rabbitmqctl" -n "$node@localhost" "$@"
}

running() { ctl "$1" -q status >/dev/null 2>&1; }

port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# The running members node $1 sees (node names, sorted, space-separated).
running_members() {
  ctl "$1" -q eval 'lists:sort(rabbit_nodes:all_running()).' 2>/dev/null | tr -d "[]'\n" | tr ',' ' '
}

expected_members() {
  local port
  for port in $PORTS; do printf '%s@localhost ' "$(node_name "$port")"; done | xargs
}

all_clustered() {
  local port want
  want=$(expected_members)
  for port in $PORTS; do
    [ "$(running_members "$(node_name "$port")" | xargs)" = "$want" ] || return 1
  done
}

wait_until() { # seconds description command...
  local seconds=$1 what=$2; shift 2
  local i
  for ((i = 0; i < seconds * 2; i++)); do
    if "$@"; then return 0; fi
    sleep 0.5
  done
  echo "rabbit-cluster: timed out after ${seconds}s waiting for $what" >&2
  return 1
}

write_node_files() { # node
  local node=$1 port
  port=$(node_port "$node")
  mkdir -p "$DIR/$node/mnesia" "$DIR/$node/log"
  : >"$DIR/$node/rabbitmq-env.conf"
  echo '[].' >"$DIR/$node/enabled_plugins"
  echo '[].' >"$DIR/$node/advanced.config"
  cat >"$DIR/$node/rabbitmq.conf" <<CONF
listeners.tcp.1 = $HOST:$port
loopback_users.guest = true
# A small node: the whole cluster shares the machine with everything else.
vm_memory_high_watermark.absolute = 1GB
disk_free_limit.absolute = 50MB
log.file.level = info
log.console = false
CONF
}

start_node() { # node
  local node=$1 port
  port=$(node_port "$node")
  if running "$node"; then return 0; fi
  if port_open "$port"; then
    echo "rabbit-cluster: $HOST:$port is taken by another process; choose RABBIT_CLUSTER_PORTS" >&2
    exit 1
  fi
  [ -f "$DIR/$node/rabbitmq.conf" ] || write_node_files "$node"
  # shellcheck disable=SC2046
  (cd "$DIR" && env $(node_env "$node") RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="$ERL_ARGS -kernel inet_dist_use_interface {127,0,0,1}" \
    "$(bin_dir)/rabbitmq-server" -detached >>"$DIR/$node/log/startup.log" 2>&1)
}

reachable() { ctl "$1" -q ping >/dev/null 2>&1; }

await_node() { # node
  # await_startup needs the Erlang node to answer already: a node started with -detached takes a moment.
  if ! wait_until 60 "$1@localhost to answer" reachable "$1" \
    || ! ctl "$1" -q await_startup --timeout 90 >/dev/null 2>&1; then
    echo "rabbit-cluster: node $1@localhost did not start; its logs:" >&2
    tail -n 30 "$DIR/$1/log/"*.log >&2 || true
    exit 1
  fi
}

up() {
  bin_dir >/dev/null
  local port count=0 first=""
  for port in $PORTS; do
    count=$((count + 1))
    [ -n "$first" ] || first=$(node_name "$port")
  done
  if [ "$count" -lt 3 ]; then
    echo "rabbit-cluster: a quorum that survives a node loss needs at least 3 nodes, RABBIT_CLUSTER_PORTS has $count" >&2
    exit 2
  fi
  if [ -f "$DIR/.erlang.cookie" ] && all_clustered; then
    echo "rabbit-cluster: already up on $HOST ports $PORTS"
    return
  fi
  if [ -f "$DIR/.erlang.cookie" ]; then
    echo "rabbit-cluster: $DIR holds a cluster that is not fully up; run '$0 down' first" >&2
    exit 1
  fi
  rm -rf "$DIR"
  mkdir -p "$DIR"
  # One cookie for these nodes only: they can never join (or be joined by) the shared broker.
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DIR/.erlang.cookie"
  chmod 400 "$DIR/.erlang.cookie"
  for port in $PORTS; do
    start_node "$(node_name "$port")"
  done
  # The nodes boot at once; each wait (and each rabbitmqctl call: an Erlang VM of its own, ~1-2 s) runs beside the
  # others'.
  local node pids=()
  for port in $PORTS; do
    await_node "$(node_name "$port")" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || exit 1
  done
  for port in $PORTS; do
    node=$(node_name "$port")
    [ "$node" = "$first" ] && continue
    # What stop_app, join_cluster (which resets a fresh node itself) and start_app do, in one rabbitmqctl call
    # instead of three; one node after the other. Its output (feature-flag warnings are normal) goes to join.log.
    if ! ctl "$node" -q eval "ok = rabbit:stop(), ok = rabbit_mnesia:join_cluster('$first@localhost', disc), \
ok = rabbit:start()." >>"$DIR/join.log" 2>&1; then
      cat "$DIR/join.log" >&2
      echo "rabbit-cluster: $node@localhost could not join $first@localhost" >&2
      exit 1
    fi
  done
  wait_until 60 "every node to see $(expected_members) running" all_clustered
  echo "rabbit-cluster: up on $HOST ports $PORTS (nodes $(expected_members); dir $DIR)"
}

stop_node() { # node
  local node=$1 pid=""
  [ -f "$DIR/$node/rabbit.pid" ] && pid=$(cat "$DIR/$node/rabbit.pid")
  if running "$node"; then
    timeout 60 env $(node_env "$node") "$(bin_dir)/rabbitmqctl" -n "$node@localhost" -q stop >/dev/null 2>&1 || true
  fi
  # Only this node's own pid (from its pid file) is ever killed, and only when it outlived 'rabbitmqctl stop'.
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    wait_until 20 "$node@localhost (pid $pid) to exit" bash -c "! kill -0 $pid 2>/dev/null" || kill -9 "$pid" 2>/dev/null || true
  fi
  wait_until 20 "$node's port to close" bash -c "! (exec 3<>/dev/tcp/$HOST/$(node_port "$node")) 2>/dev/null"
}

down() {
  local port node
  if [ -d "$DIR" ]; then
    bin_dir >/dev/null
    # the nodes stop at once (each stop is a rabbitmqctl call and a node shutdown)
    local pids=()
    for port in $PORTS; do
      stop_node "$(node_name "$port")" &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do
      wait "$pid" || true
    done
    if [ -n "${RABBIT_CLUSTER_LOGS_TO:-}" ]; then
      for port in $PORTS; do
        node=$(node_name "$port")
        mkdir -p "$RABBIT_CLUSTER_LOGS_TO/$node"
        cp "$DIR/$node/log/"*.log "$RABBIT_CLUSTER_LOGS_TO/$node/" 2>/dev/null || true
      done
    fi
  fi
  rm -rf "$DIR"
  echo "rabbit-cluster: down"
}

status() {
  bin_dir >/dev/null
  local port node rc=0 want
  want=$(expected_members)
  for port in $PORTS; do
    node=$(node_name "$port")
    if [ ! -f "$DIR/.erlang.cookie" ] || ! running "$node"; then
      echo "$node@localhost $HOST:$port  not running"
      rc=1
      continue
    fi
    local seen
    seen=$(running_members "$node" | xargs)
    echo "$node@localhost $HOST:$port  running; sees running: $seen"
    [ "$seen" = "$want" ] || rc=1
  done
  return $rc
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  stop-node)
    [ -n "${2:-}" ] || { usage >&2; exit 2; }
    node_port "$2" >/dev/null
    stop_node "$2"
    echo "rabbit-cluster: $2@localhost stopped"
    ;;
  start-node)
    [ -n "${2:-}" ] || { usage >&2; exit 2; }
    node_port "$2" >/dev/null
    start_node "$2"
    await_node "$2"
    echo "rabbit-cluster: $2@localhost started"
    ;;
  ctl)
    [ -n "${2:-}" ] || { usage >&2; exit 2; }
    node=$2; shift 2
    node_port "$node" >/dev/null
    ctl "$node" "$@"
    ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
