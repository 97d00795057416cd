#!/usr/bin/env bash
# Benchmarks the relay against a RabbitMQ ceiling and two baselines (the seed design, Redisson RDelayedQueue) and
# prints one table of figures and ratios measured in the same run; also writes it to bench/results/<date>.md.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/bench.sh [--full] [--messages N] [--only SCENARIOS] [--runs N] [--storm-entries N] [--cold-entries N] [--shared-redis] [--skip-build] [--help]

Runs in one go, on the local Redis and RabbitMQ:
  1. drain    N messages of 100 B over 16 shards, all due at once and due over 1 s: the relay (defaults, the best
              of a threads/batch sweep, and 3 instances), two ceilings (publishing from memory with confirms in the
              harness, and RabbitMQ's own PerfTest in its own JVM: same N, persistent, confirms, durable queue, no
              consumer), the seed design (blog 004) and Redisson RDelayedQueue; Redis commands and CPU per message.
              4. memory (Redis bytes per scheduled message) is measured from the same loads.
  5. idle     Redis commands/s of 10 businesses x 16 shards with nothing due (10 s): 1 and 3 relay instances with
              keyspace notifications, 1 instance without
  2. lag      producer at fixed rates, due 1-5 s ahead; p50/p99/p999/max lag for relay (relay-api producer and
              plain ZADD producer), seed, Redisson. The relay runs as its exec jar, the producer and the consumer
              each in their own JVM (due->published, published->received from the x-delay-relayed-at header);
              an in-process run at 5k msg/s gives the same two stages from the same headers. Logs: bench/results/logs/<date>[-full]/
  3. backlog  drain rate with far-future entries present vs absent
  6. shape    the broker's CPU per message of each part of the relay's message shape: PerfTest plain, with a
              message id, content type, priority, each x-delay-* header alone, mandatory, the full shape and the
              lean shape; the relay draining with message-shape full and lean; 3 rounds (about 6 minutes)
  6. storm    500,000 entries of one business due in the same second (--storm-entries N to change), drained by
              the relay's exec jar with a consumer reading as it goes: once without a cap, then with max-rate
              5,000 (2 threads, then 4); drain rate, lateness (receive - due, publish - due) p50/p99/max, on time
              within 1 s, lost/duplicates, broker RSS and queue peaks, and the ratio to PerfTest run before and
              after. About 7 minutes.
  7. cold     the cold tier (docs/cold-tier.md): 1,000,000 entries by id due in 7-30 days (--cold-entries N to
              change): Redis bytes per entry hot and once demoted, demotion and promotion entries/s with the CPU
              Redis and the relay spend per entry, cancel/reschedule p99 of cold entries; then as many plain-ZADD
              members (the ~110 B JSON message is the member): Redis bytes per entry hot and once demoted; then the
              relay's exec jar with cold-after 20s and 60,000 entries falling due at 2,000/s for 30 s after a round
              trip through the cold tier: lag p50/p99/max and early. Only with --only cold or --full. About 6 minutes
              at 1 M.
  8. intake   the AMQP intake (docs/amqp-intake.md) through the exec jar: 50,000 messages of 100 B with x-delay 0
              published with confirms and consumed from deliver-to, against PerfTest publishing and consuming the
              same; lag p50/p99/max at 1,000 msg/s (x-delay 1-5 s) for 30 s; Redis bytes per waiting entry (100 B,
              3 headers). Only with --only intake or --full. About 2 minutes.
  9. schedules  recurring schedules (issue 42) through the exec jar, 3 instances on the private Redis:
              fire lag of 20 schedules every 1 s for 60 s (x-delay-relayed-at - x-delay-slot and receive - slot
              p50/p99/max, early, duplicates, missing slots); idle cost of 10,000 schedules every 1 min over 10
              businesses (70 s warm-up, Redis commands/s over 60 s from INFO commandstats, by command) against the
              same fleet with no schedule. Only with --only schedules or --full. About 7 minutes.

  (default)       quick mode: N = 50,000; lag 2k and 5k msg/s for 30 s (baselines at 5k); backlog 1,000,000;
                  baselines capped at 8 s of draining; the message shape; the storm of 500,000. About 25 minutes on 2 busy cores. (N is not the issue's
                  200,000: with a durable queue and confirms the broker alone takes ~8k msg/s here, so nine
                  drains of 200,000 would take 6+ minutes; use --messages 200000 for that.)
  --full          N = 1,000,000; lag 2k/5k/10k msg/s for 60 s (baselines at 5k, capped at 30 s of draining);
                  backlog 10,000,000; writes bench/results/<date>-full.md. Around 45 minutes (prints an
                  estimate and the progress of every part; a failing part is reported and the run goes on).
  --messages N    messages per drain instead of the mode's default
  --storm-entries N  entries of the storm scenario (default 500,000)
  --runs N        N consecutive runs (1-10) of the selected scenarios: each writes its own report (-runK.md), then
                  <date>[-only-<list>]-runs.md puts every target side by side, one column per run, and says
                  whether every run met it (the issues ask for each of 3 consecutive runs, not the best)
  --cold-entries N   entries of the cold scenario's sizing and moves (default 1,000,000)
  --lag-seconds N    seconds of sending per lag rate, 10-600 (default 30, 60 with --full); the steady-state
                  table reads the phase less its first 5 s
  --only LIST     comma-separated subset of: drain,idle,lag,backlog,shape,storm,cold,intake,schedules (writes <date>-only-<list>.md, ignored by git)
  --shared-redis  measure on the Redis at REDIS_HOST:REDIS_PORT instead of a private redis-server started
                  for the run (the private one keeps INFO commandstats, CPU and memory free of other clients)
  --skip-build    reuse the last build of the relay and of the bench (PerfTest's classpath is still resolved if missing)

Environment: REDIS_HOST (127.0.0.1), REDIS_PORT (6379), RABBIT_HOST (127.0.0.1), RABBIT_PORT (5672),
             BENCH_REDIS_PORT (6399, the private instance), BENCH_JAVA_OPTS (-Xmx3g),
             BENCH_BROKER_PID (charge only this beam.smp as the broker's CPU, e.g. a private RabbitMQ node's
             given with RABBIT_PORT; default: every local beam.smp).
The private Redis runs with notify-keyspace-events Kz (keyspace notifications wake the relay).
Builds through the reactor (-Pbench): nothing is installed into ~/.m2. PerfTest (com.rabbitmq:perf-test) is
resolved from Maven Central by bench/perf-test.xml.
Needs: java 17+, redis-server and redis-cli (for the private instance), RabbitMQ with guest/guest.
Cleans up every key, exchange and queue it creates.
USAGE
}

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "error: $1 is not installed. $2" >&2; exit 127; }
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODE_ARGS=() ONLY="" SHARED=0 BUILD=1 FULL=""
while [ $# -gt 0 ]; do
  case "$1" in
    --full) MODE_ARGS+=(--full); FULL=-full ;;
    --messages) [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || { echo "error: --messages needs a number" >&2; exit 2; }
                MODE_ARGS+=(--messages "$2"); shift ;;
    --only) [ $# -ge 2 ] || { echo "error: --only needs a list, e.g. --only drain,idle" >&2; exit 2; }
            ONLY=$2; shift ;;
    --runs) [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -ge 1 ] && [ "$2" -le 10 ] \
              || { echo "error: --runs needs a number from 1 to 10, was '${2:-}'" >&2; exit 2; }
            MODE_ARGS+=(--runs "$2"); shift ;;
    --storm-entries) [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || { echo "error: --storm-entries needs a number" >&2; exit 2; }
                     MODE_ARGS+=(--storm-entries "$2"); shift ;;
    --lag-seconds) [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -ge 10 ] && [ "$2" -le 600 ] \
                   || { echo "error: --lag-seconds needs a number from 10 to 600, was '${2:-}'" >&2; exit 2; }
                   MODE_ARGS+=(--lag-seconds "$2"); shift ;;
    --cold-entries) [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || { echo "error: --cold-entries needs a number" >&2; exit 2; }
                    MODE_ARGS+=(--cold-entries "$2"); shift ;;
    --shared-redis) SHARED=1 ;;
    --skip-build) BUILD=0 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$ONLY" ]; then
  for s in ${ONLY//,/ }; do
    case "$s" in drain|idle|lag|backlog|shape|storm|cold|intake|schedules) ;; *) echo "error: unknown scenario '$s' (drain,idle,lag,backlog,shape,storm,cold,intake,schedules)" >&2; exit 2 ;; esac
  done
fi

REDIS_HOST=${REDIS_HOST:-127.0.0.1}
REDIS_PORT=${REDIS_PORT:-6379}
RABBIT_HOST=${RABBIT_HOST:-127.0.0.1}
RABBIT_PORT=${RABBIT_PORT:-5672}
BENCH_REDIS_PORT=${BENCH_REDIS_PORT:-6399}

need java "Install a JDK 17+ (e.g. apt-get install openjdk-17-jdk-headless)."
JAVA_MAJOR=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
if [ -z "$JAVA_MAJOR" ] || [ "$JAVA_MAJOR" -lt 17 ]; then
  echo "error: java 17+ is needed, found: $(java -version 2>&1 | head -1)" >&2
  exit 127
fi
if [ "$SHARED" = 0 ]; then
  need redis-server "It runs a private Redis for clean measurements; or pass --shared-redis."
  need redis-cli "It runs a private Redis for clean measurements; or pass --shared-redis."
fi

"$ROOT/scripts/services.sh" up

if [ "$BUILD" = 1 ]; then
  # Through the reactor (-Pbench): the harness uses this checkout's relay jars, nothing is installed into ~/.m2.
  echo "[bench] building the relay and the bench (tests skipped)" >&2
  (cd "$ROOT" && ./mvnw -B -q -Pbench package dependency:build-classpath -DskipTests -pl bench -am \
      -Dmdep.outputFile=target/classpath.txt) || {
    echo "error: building the relay or the bench failed (above); fix it, or pass --skip-build" >&2
    exit 1
  }
fi
[ -f "$ROOT/bench/target/classpath.txt" ] || { echo "error: the bench is not built; run without --skip-build" >&2; exit 1; }
# PerfTest's classpath is resolved, not built: also with --skip-build when an earlier build did not resolve it
if [ "$BUILD" = 1 ] || [ ! -f "$ROOT/bench/target/perf-test-classpath.txt" ]; then
  (cd "$ROOT" && ./mvnw -B -q -f bench/perf-test.xml dependency:build-classpath \
      -Dmdep.outputFile=target/perf-test-classpath.txt) || {
    echo "error: resolving RabbitMQ PerfTest (com.rabbitmq:perf-test) failed (above)" >&2; exit 1; }
fi

PRIVATE_DIR=""
cleanup() {
  if [ -n "$PRIVATE_DIR" ]; then
    redis-cli -h 127.0.0.1 -p "$BENCH_REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
    rm -rf "$PRIVATE_DIR"
  fi
}
trap cleanup EXIT

BENCH_ARGS=(--rabbit "$RABBIT_HOST:$RABBIT_PORT" --out "$ROOT/bench/results"
            --perf-test-classpath "$ROOT/bench/target/perf-test-classpath.txt")
if [ "$SHARED" = 0 ]; then
  if redis-cli -h 127.0.0.1 -p "$BENCH_REDIS_PORT" ping >/dev/null 2>&1; then
    echo "error: port $BENCH_REDIS_PORT is already in use; set BENCH_REDIS_PORT to a free port" >&2
    exit 1
  fi
  PRIVATE_DIR=$(mktemp -d)
  # Keyspace notifications on, as docs/operations.md recommends: the relay wakes on any producer's ZADD.
  redis-server --daemonize yes --bind 127.0.0.1 --port "$BENCH_REDIS_PORT" --save "" --appendonly no \
    --notify-keyspace-events Kz \
    --dir "$PRIVATE_DIR" --logfile "$PRIVATE_DIR/redis.log" --pidfile "$PRIVATE_DIR/redis.pid" >/dev/null
  for _ in $(seq 1 50); do
    redis-cli -h 127.0.0.1 -p "$BENCH_REDIS_PORT" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  redis-cli -h 127.0.0.1 -p "$BENCH_REDIS_PORT" ping >/dev/null 2>&1 \
    || { echo "error: private redis-server did not start; see $PRIVATE_DIR/redis.log" >&2; exit 1; }
  echo "[bench] private Redis on 127.0.0.1:$BENCH_REDIS_PORT" >&2
  BENCH_ARGS+=(--redis "127.0.0.1:$BENCH_REDIS_PORT" --private-redis)
else
  BENCH_ARGS+=(--redis "$REDIS_HOST:$REDIS_PORT")
fi
[ -z "$ONLY" ] || BENCH_ARGS+=(--only "$ONLY")

cd "$ROOT/bench"
# Run on a private copy of the relay's jars: a build in this checkout while the benchmark runs would replace them.
rm -rf target/relay-lib && mkdir -p target/relay-lib
CP=""
IFS=: read -r -a ENTRIES < target/classpath.txt || true  # no trailing newline: read returns 1
for entry in "${ENTRIES[@]}"; do
  case "$entry" in
    "$ROOT"/relay-*/target/*.jar) cp "$entry" target/relay-lib/ && entry="target/relay-lib/$(basename "$entry")" ;;
  esac
  CP="$CP:$entry"
done
# The relay as a process for the lag scenario: the shipped exec jar, copied for the same reason.
EXEC_JAR=$(ls "$ROOT"/relay-app/target/relay-app-*-exec.jar 2>/dev/null | head -1 || true)
[ -n "$EXEC_JAR" ] || { echo "error: relay-app/target/relay-app-*-exec.jar is missing; run without --skip-build" >&2; exit 1; }
cp "$EXEC_JAR" target/relay-lib/
LOGS="$ROOT/bench/results/logs/$(date +%Y-%m-%d)$FULL"
mkdir -p "$LOGS"
echo "[bench] logs of the processes the bench starts (the relay's exec jar, lag producer and consumer): $LOGS" >&2
BENCH_ARGS+=(--relay-jar "target/relay-lib/$(basename "$EXEC_JAR")" --logs "$LOGS")
# shellcheck disable=SC2086
java ${BENCH_JAVA_OPTS:--Xmx3g} -cp "target/classes$CP" io.delayrelay.bench.Bench \
  "${MODE_ARGS[@]}" "${BENCH_ARGS[@]}"
