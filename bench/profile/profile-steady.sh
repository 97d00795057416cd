#!/usr/bin/env bash
# Where the relay's CPU goes at a steady rate: the shipped exec jar against a private redis-server (keyspace
# notifications on) and the local RabbitMQ, fed by steady-load.py, measured over a window after a warm-up; with
# PROFILE=1, async-profiler (CPU, 1 ms interval, per thread) over the same window.
#
# usage: bench/profile/profile-steady.sh [relay argument ...]     e.g. --relay.defaults.lead=20ms
# Environment: RATE (2000 msg/s), SHARDS (16), WARM (60 s), WINDOW (60 s), PROFILE (0; 1 = async-profiler),
#              PROFILE_PORT (18322, the private Redis), RELAY_JAR (relay-app/target/relay-app-*-exec.jar).
# Prints: relay JVM cores over the window and by thread group, Redis cores and commands/s by type (the commands
# scripts run included), what the consumer received; with PROFILE=1 the top frames by thread group and the
# collapsed stacks' path (bench/target/profile-<time>.collapsed, for a flame graph).
# Needs: java 17+, redis-server, redis-cli, bc, python3 with redis and pika (apt-get install python3-redis
# python3-pika), RabbitMQ with guest/guest; PROFILE=1 resolves tools.profiler:async-profiler:4.1 from Maven Central.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/bench/profile"
RATE=${RATE:-2000} SHARDS=${SHARDS:-16} WARM=${WARM:-60} WINDOW=${WINDOW:-60} PROFILE=${PROFILE:-0}
PORT=${PROFILE_PORT:-18322}
for n in RATE SHARDS WARM WINDOW PORT; do
  [[ "${!n}" =~ ^[0-9]+$ ]] && [ "${!n}" -gt 0 ] || { echo "error: $n must be a positive number, was '${!n}'" >&2; exit 2; }
done
need() { command -v "$1" >/dev/null 2>&1 || { echo "error: $1 is not installed. $2" >&2; exit 127; }; }
need redis-server "apt-get install redis-server"; need bc "apt-get install bc"; need java "Install a JDK 17+."
/usr/bin/python3 -c "import redis, pika" 2>/dev/null \
  || { echo "error: python3 needs redis and pika: apt-get install python3-redis python3-pika" >&2; exit 127; }
JAR=${RELAY_JAR:-$(ls "$ROOT"/relay-app/target/relay-app-*-exec.jar 2>/dev/null | head -1)}
[ -f "$JAR" ] || { echo "error: no exec jar; build it: ./mvnw -B -q package -DskipTests -pl relay-app -am" >&2; exit 1; }
if redis-cli -p "$PORT" ping >/dev/null 2>&1; then echo "error: port $PORT is in use; set PROFILE_PORT" >&2; exit 1; fi
mkdir -p "$ROOT/bench/target"
STAMP=$(date -u +%Y%m%dT%H%M%S)
WORK=$(mktemp -d)
RELAY=""
cleanup() {
  set +e
  [ -z "$RELAY" ] || { kill "$RELAY" 2>/dev/null; wait "$RELAY" 2>/dev/null; }
  redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
redis-server --daemonize yes --bind 127.0.0.1 --port "$PORT" --save "" --appendonly no --dir "$WORK" \
  --notify-keyspace-events Kz --logfile "$WORK/redis.log" >/dev/null
for _ in $(seq 1 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

LIB=""
if [ "$PROFILE" = 1 ]; then
  AP="$HOME/.m2/repository/tools/profiler/async-profiler/4.1/async-profiler-4.1.jar"
  [ -f "$AP" ] || "$ROOT/mvnw" -B -q dependency:get -Dartifact=tools.profiler:async-profiler:4.1 >/dev/null
  mkdir -p "$ROOT/bench/target/async-profiler"
  (cd "$ROOT/bench/target/async-profiler" && unzip -o -q "$AP" 'linux-x64/*')
  LIB="$ROOT/bench/target/async-profiler/linux-x64/libasyncProfiler.so"
fi

B=profile-steady EX="profile-steady.$STAMP" K=delayqueue:profile-steady
java -Xmx512m -jar "$JAR" --spring.data.redis.host=127.0.0.1 --spring.data.redis.port="$PORT" \
  --spring.main.web-application-type=none --spring.main.banner-mode=off \
  --relay.businesses.$B.exchange="$EX" --relay.businesses.$B.routing-key=due --relay.businesses.$B.shards="$SHARDS" \
  --relay.businesses.$B.declare-exchange=true "$@" > "$WORK/relay.log" 2>&1 &
RELAY=$!
for _ in $(seq 1 120); do grep -q "delay-relay started" "$WORK/relay.log" && break
  kill -0 "$RELAY" 2>/dev/null || { echo "error: the relay stopped:" >&2; tail -20 "$WORK/relay.log" >&2; exit 1; }
  sleep 0.5; done
grep -q "delay-relay started" "$WORK/relay.log" || { echo "error: the relay did not start in 60 s" >&2; exit 1; }

/usr/bin/python3 "$HERE/steady-load.py" "$PORT" "$RATE" $((WARM + WINDOW + 5)) "$K" "$EX" "$SHARDS" > "$WORK/load.txt" &
LOAD=$!
sleep "$WARM"
HZ=$(getconf CLK_TCK)
threads() { for t in /proc/$RELAY/task/*; do printf '%s %s\n' "$(tr ' ' _ < "$t/comm" | sed 's/-[0-9]*$//')" \
  "$(awk '{print $14+$15}' "$t/stat")"; done | awk '{s[$1]+=$2} END{for (k in s) print k, s[k]}' | sort; }
rcpu() { redis-cli -p "$PORT" info cpu | awk -F: '/used_cpu_(sys|user):/{s+=$2} END{printf "%.3f", s}'; }
threads > "$WORK/t0"; C0=$(awk '{print $14+$15}' /proc/$RELAY/stat); R0=$(rcpu)
redis-cli -p "$PORT" config resetstat >/dev/null
[ -z "$LIB" ] || java "$HERE/Attach.java" "$RELAY" "$LIB" "start,event=cpu,interval=1ms,threads" >/dev/null
sleep "$WINDOW"
OUT="$ROOT/bench/target/profile-$STAMP.collapsed"
[ -z "$LIB" ] || java "$HERE/Attach.java" "$RELAY" "$LIB" "stop,file=$OUT,collapsed" >/dev/null
threads > "$WORK/t1"; C1=$(awk '{print $14+$15}' /proc/$RELAY/stat); R1=$(rcpu)
CMDS=$(redis-cli -p "$PORT" info commandstats | tr -d '\r' \
  | awk -F'[:,=]' -v w="$WINDOW" '/^cmdstat_/{sub("cmdstat_","",$1); if ($1 != "config|resetstat" && $3/w >= 1) printf "%s %d/s, ", $1, $3/w}')
wait "$LOAD"
echo "steady $RATE msg/s over $SHARDS shards, window ${WINDOW}s after ${WARM}s; relay arguments: ${*:-(none)}"
echo "relay JVM cores: $(echo "($C1-$C0)/$HZ/$WINDOW" | bc -l | awk '{printf "%.3f", $1}')" \
  "($(echo "($C1-$C0)/$HZ/$WINDOW/$RATE*1000000" | bc -l | awk '{printf "%.0f", $1}') µs per message)," \
  "Redis cores: $(echo "($R1-$R0)/$WINDOW" | bc -l | awk '{printf "%.3f", $1}') (producer writes included)"
echo "relay threads (cores):"
join "$WORK/t0" "$WORK/t1" | awk -v hz="$HZ" -v w="$WINDOW" '{d=($3-$2)/hz/w; if (d >= 0.001) printf "  %-32s %.3f\n", $1, d}' | sort -k2 -nr
echo "Redis commands: ${CMDS%, }"
echo "load: $(cat "$WORK/load.txt")"
if [ -n "$LIB" ]; then
  echo "profile: $OUT (async-profiler, cpu, 1 ms); top frames by thread group (inclusive samples):"
  awk '{n=$NF; split($1, f, ";"); t=f[1]; gsub(/^\[|[-_ ]?[0-9]+( tid=[0-9]+)?\]$|\]$/, "", t); s[t]+=n} END{for (k in s) printf "%d %s\n", s[k], k}' "$OUT" \
    | sort -nr | head -8 | while read -r n t; do
      echo "  $t: $n samples"
      grep -F "[$t" "$OUT" | awk '{n=$NF; $NF=""; k=split($0, f, ";"); delete seen; for (i=2; i<=k; i++) if (f[i] ~ /delayrelay|lettuce\/core|rabbitmq\/client\/impl|springframework/ && !(f[i] in seen)) {seen[f[i]]=1; s[f[i]]+=n}} END{for (x in s) printf "%d %s\n", s[x], x}' \
        | sort -nr | head -6 | sed 's/^/      /'
    done
fi
