#!/usr/bin/env bash
# What Redis keyspace notifications cost Redis: CPU per ZADD with notify-keyspace-events off, on without a
# subscriber, and on with one pattern subscriber (what a relay instance adds), on a private redis-server.
# Prints microseconds of Redis CPU per ZADD (median of ROUNDS) and what that is at 10,000 writes/s.
set -euo pipefail
PORT=${NOTIFY_COST_PORT:-18320}
N=${NOTIFY_COST_WRITES:-300000}
ROUNDS=${NOTIFY_COST_ROUNDS:-3}
command -v redis-benchmark >/dev/null || { echo "error: redis-benchmark is not installed (apt-get install redis-tools)" >&2; exit 127; }
if redis-cli -p "$PORT" ping >/dev/null 2>&1; then
  echo "error: port $PORT is in use; set NOTIFY_COST_PORT" >&2; exit 1
fi
DIR=$(mktemp -d)
SUB=""
cleanup() {
  [ -z "$SUB" ] || kill "$SUB" 2>/dev/null || true
  redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$DIR"
}
trap cleanup EXIT
redis-server --daemonize yes --bind 127.0.0.1 --port "$PORT" --save "" --appendonly no --dir "$DIR" \
  --logfile "$DIR/redis.log" >/dev/null
for _ in $(seq 1 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

cpu() { redis-cli -p "$PORT" info cpu | awk -F: '/used_cpu_(sys|user):/{s+=$2} END{printf "%.6f", s}'; }
# Redis CPU µs per ZADD (pipelined, so that the network syscalls weigh less than the command itself)
measure() {
  redis-cli -p "$PORT" del delayqueue:cost:3 >/dev/null
  local c0 c1
  c0=$(cpu)
  redis-benchmark -p "$PORT" -n "$N" -c 4 -P 16 -r 10000000 -q zadd delayqueue:cost:3 __rand_int__ m:__rand_int__ \
    >/dev/null
  c1=$(cpu)
  echo "($c1 - $c0) * 1000000 / $N" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }

declare -A RESULT
for mode in off on subscribed; do
  case $mode in
    off) redis-cli -p "$PORT" config set notify-keyspace-events "" >/dev/null ;;
    on) redis-cli -p "$PORT" config set notify-keyspace-events Kz >/dev/null ;;
    subscribed)
      redis-cli -p "$PORT" psubscribe '__keyspace@0__:delayqueue:cost:[0-9]*' > "$DIR/sub.out" &
      SUB=$!
      sleep 0.3 ;;
  esac
  RESULT[$mode]=$(for _ in $(seq 1 "$ROUNDS"); do measure; done | median)
done
printf 'Redis CPU per ZADD (median of %d x %d pipelined writes):\n' "$ROUNDS" "$N"
for mode in off on subscribed; do
  printf '  notifications %-10s %6.2f us' "$mode" "${RESULT[$mode]}"
  [ "$mode" = off ] && { echo; continue; }
  extra=$(echo "${RESULT[$mode]} - ${RESULT[off]}" | bc -l)
  printf '  (+%.2f us; at 10,000 writes/s: +%.1f%% of one core)\n' "$extra" "$(echo "$extra * 10000 / 10000" | bc -l)"
done
echo "  the subscriber received $(grep -c zadd "$DIR/sub.out" || true) notifications"
