#!/usr/bin/env bash
# Starts, stops or checks a throwaway local Redis Cluster (masters only, loopback) for tests and experiments.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/redis-cluster.sh up|down|status [--help]

  up      start one redis-server --cluster-enabled yes per port (loopback only, no persistence), each with its own
          --dir under REDIS_CLUSTER_DIR, join them with 'redis-cli --cluster create --cluster-replicas 0' and wait
          until every node reports cluster_state:ok. Does nothing when that cluster is already up and ok.
  down    shut every node down (SHUTDOWN NOSAVE) and delete REDIS_CLUSTER_DIR
  status  print each node's state and slot ranges; exit 1 unless every node answers with cluster_state:ok

Environment:
  REDIS_CLUSTER_PORTS  space-separated ports, one master each (default "7101 7102 7103"; at least 3)
  REDIS_CLUSTER_HOST   address to bind and announce (default 127.0.0.1)
  REDIS_CLUSTER_DIR    working directory (default ${TMPDIR:-/tmp}/delay-relay-redis-cluster)

The relay then needs only configuration, e.g.
  spring.data.redis.cluster.nodes=127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103
USAGE
}

PORTS=${REDIS_CLUSTER_PORTS:-"7101 7102 7103"}
HOST=${REDIS_CLUSTER_HOST:-127.0.0.1}
DIR=${REDIS_CLUSTER_DIR:-${TMPDIR:-/tmp}/delay-relay-redis-cluster}

need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "redis-cluster: '$1' is not installed (apt-get install redis-server provides redis-server and redis-cli)" >&2
    exit 2
  fi
}

cli() { # port args...
  local port=$1; shift
  redis-cli -h "$HOST" -p "$port" "$@"
}

answers() { [ "$(cli "$1" ping 2>/dev/null)" = "PONG" ]; }

state_of() { cli "$1" cluster info 2>/dev/null | tr -d '\r' | sed -n 's/^cluster_state://p'; }

all_ok() {
  local port
  for port in $PORTS; do
    [ "$(state_of "$port")" = "ok" ] || return 1
  done
}

wait_until() { # seconds description command...
  local seconds=$1 what=$2; shift 2
  local i
  for ((i = 0; i < seconds * 10; i++)); do
    if "$@"; then return 0; fi
    sleep 0.1
  done
  echo "redis-cluster: timed out after ${seconds}s waiting for $what" >&2
  return 1
}

up() {
  need redis-server
  need redis-cli
  local port count=0
  for port in $PORTS; do count=$((count + 1)); done
  if [ "$count" -lt 3 ]; then
    echo "redis-cluster: a cluster needs at least 3 masters, REDIS_CLUSTER_PORTS has $count" >&2
    exit 2
  fi
  if all_ok; then
    echo "redis-cluster: already up on $HOST ports $PORTS"
    return
  fi
  for port in $PORTS; do
    if answers "$port"; then
      echo "redis-cluster: $HOST:$port already answers but the cluster is not ok; run '$0 down' first" >&2
      exit 1
    fi
  done
  rm -rf "$DIR"
  mkdir -p "$DIR"
  local nodes=()
  for port in $PORTS; do
    mkdir -p "$DIR/$port"
    redis-server --daemonize yes --bind "$HOST" --port "$port" --protected-mode yes \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
      --cluster-announce-ip "$HOST" --save "" --appendonly no \
      --dir "$DIR/$port" --pidfile "$DIR/$port/redis.pid" --logfile "$DIR/$port/redis.log"
    nodes+=("$HOST:$port")
  done
  for port in $PORTS; do
    wait_until 10 "redis-server on port $port" answers "$port"
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$DIR/create.log" 2>&1 || {
    cat "$DIR/create.log" >&2
    echo "redis-cluster: 'redis-cli --cluster create' failed" >&2
    exit 1
  }
  wait_until 30 "cluster_state:ok on every node" all_ok
  echo "redis-cluster: up on $HOST ports $PORTS (dir $DIR)"
}

down() {
  local port
  for port in $PORTS; do
    if answers "$port"; then
      cli "$port" shutdown nosave >/dev/null 2>&1 || true
    fi
  done
  for port in $PORTS; do
    wait_until 10 "redis-server on port $port to stop" bash -c "! redis-cli -h $HOST -p $port ping >/dev/null 2>&1"
  done
  rm -rf "$DIR"
  echo "redis-cluster: down"
}

status() {
  need redis-cli
  local port ok=0 state
  for port in $PORTS; do
    if ! answers "$port"; then
      echo "$HOST:$port  not running"
      ok=1
      continue
    fi
    state=$(state_of "$port")
    echo "$HOST:$port  cluster_state:${state:-unknown}  keys:$(cli "$port" dbsize)  slots:$(cli "$port" cluster nodes \
      | awk '/myself/ { s = ""; for (i = 9; i <= NF; i++) s = s $i " "; print s }')"
    [ "$state" = "ok" ] || ok=1
  done
  return $ok
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
