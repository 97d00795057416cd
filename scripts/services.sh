#!/usr/bin/env bash
# Starts, stops or checks the local Redis and RabbitMQ the relay, its tests and its benchmark use.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/services.sh up|down|status [--help]

  up      start Redis (127.0.0.1:6379) and RabbitMQ (127.0.0.1:5672) if they are installed and not running,
          then wait until both answer
  down    stop the local Redis and RabbitMQ
  status  print whether each answers; exit 1 if one does not

Environment: REDIS_HOST (127.0.0.1), REDIS_PORT (6379), RABBIT_HOST (127.0.0.1), RABBIT_PORT (5672).
Without local installs, start them another way, e.g. with Docker:
  docker run -d -p 6379:6379 redis:7    docker run -d -p 5672:5672 rabbitmq:3-management
USAGE
}

REDIS_HOST=${REDIS_HOST:-127.0.0.1}
REDIS_PORT=${REDIS_PORT:-6379}
RABBIT_HOST=${RABBIT_HOST:-127.0.0.1}
RABBIT_PORT=${RABBIT_PORT:-5672}

port_open() { # host port
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && exec 3>&- 3<&- 2>/dev/null
}

redis_up() {
  if command -v redis-cli >/dev/null 2>&1; then
    [ "$(redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping 2>/dev/null)" = "PONG" ]
  else
    port_open "$REDIS_HOST" "$REDIS_PORT"
  fi
}

rabbit_up() { port_open "$RABBIT_HOST" "$RABBIT_PORT"; }

start_redis() {
  if redis_up; then echo "redis: already running on $REDIS_HOST:$REDIS_PORT"; return; fi
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "redis: not reachable on $REDIS_HOST:$REDIS_PORT and redis-server is not installed." >&2
    echo "       Install it (apt-get install redis-server) or start Redis 6.2+ there another way." >&2
    return 1
  fi
  mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
  local dir=/var/lib/redis log=/var/log/redis/ci.log
  [ -w "$dir" ] || dir=$(mktemp -d)
  [ -w "$(dirname "$log")" ] || log="$dir/redis.log"
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" --save "" --appendonly no \
    --dir "$dir" --logfile "$log"
  echo "redis: started on port $REDIS_PORT"
}

start_rabbit() {
  if rabbit_up; then echo "rabbitmq: already running on $RABBIT_HOST:$RABBIT_PORT"; return; fi
  if ! command -v rabbitmq-server >/dev/null 2>&1; then
    echo "rabbitmq: not reachable on $RABBIT_HOST:$RABBIT_PORT and rabbitmq-server is not installed." >&2
    echo "          Install it (apt-get install rabbitmq-server) or start RabbitMQ 3.10+ there another way." >&2
    return 1
  fi
  rabbitmq-server -detached
  echo "rabbitmq: starting"
}

wait_for() { # name check-function seconds
  local i
  for ((i = 0; i < $3 * 2; i++)); do
    if "$2"; then echo "$1: up"; return 0; fi
    sleep 0.5
  done
  echo "$1: did not come up within $3 s" >&2
  return 1
}

cmd=${1:-}
case "$cmd" in
  -h|--help|help) usage ;;
  up)
    start_redis
    start_rabbit
    wait_for redis redis_up 20
    wait_for rabbitmq rabbit_up 90
    if command -v rabbitmqctl >/dev/null 2>&1; then
      rabbitmqctl await_startup >/dev/null 2>&1 || true
    fi
    ;;
  down)
    if redis_up && command -v redis-cli >/dev/null 2>&1; then redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" shutdown nosave || true; fi
    if command -v rabbitmqctl >/dev/null 2>&1; then rabbitmqctl stop >/dev/null 2>&1 || true; fi
    echo "stopped"
    ;;
  status)
    rc=0
    if redis_up; then echo "redis: up ($REDIS_HOST:$REDIS_PORT)"; else echo "redis: DOWN ($REDIS_HOST:$REDIS_PORT)"; rc=1; fi
    if rabbit_up; then echo "rabbitmq: up ($RABBIT_HOST:$RABBIT_PORT)"; else echo "rabbitmq: DOWN ($RABBIT_HOST:$RABBIT_PORT)"; rc=1; fi
    exit $rc
    ;;
  *) usage >&2; exit 2 ;;
esac
