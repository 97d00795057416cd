#!/usr/bin/env bash
# A chaos soak: steady producer load against 2-3 relay processes while one random fault hits every ~20 s, then an
# independent check of what reached the queue. Everything runs on loopback on servers of its own.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/soak.sh [MINUTES] [--smoke] [--help]

Runs a chaos soak for MINUTES of load (default 10; --smoke: 2), on servers of its own so it disturbs nobody:
  - a private redis-server on a free port (AOF on, keyspace notifications "Kz"),
  - the 3-node RabbitMQ cluster of scripts/rabbit-cluster.sh on SOAK_RABBIT_PORTS, with a quorum queue,
  - SOAK_RELAYS relay exec-jar processes (business "soak", 16 shards, ops token, management on free ports),
  - a producer (bench/soak/SoakTool.java): plain ZADD by message and relay-api's producer by id, with
    re-schedules, reschedules and cancels, due 0.5-10 s ahead (Redis time), about SOAK_RATE operations a second,
  - a consumer recording every delivery with its arrival time.
Every SOAK_FAULT_EVERY s (+-25%) one fault, drawn from a shuffled deck of every kind: kill -9 of a relay then restart; SIGTERM then restart; SIGSTOP of
Redis for 5-20 s; stop/start of a RabbitMQ node; keyspace notifications dropped for 10-20 s and restored; the shard
count 16->8 (or 8->16) by editing the relays' configuration file and POST /actuator/refresh on every relay (a live
reload, the same EnvironmentChangeEvent a config center sends); an operator pause for 3-10 s and resume through the
ops endpoint; a dead-letter replay through the ops endpoint; the queue's binding removed for 5-10 s (publishes come
back unroutable and go to the dead set at once: the dead letters that the replays bring back). A restarted relay is
not waited for (start-up took 15-260 s on a loaded 2-core box): its start-up is part of the chaos, and when it
became ready is in the timeline.
After the load: every fault is undone, dead letters are replayed, the relays drain (until Redis holds nothing
scheduled, in flight or dead and no delivery came for 10 s; at most SOAK_DRAIN_MAX s), the relays stop with SIGTERM
and the checker (SoakTool check) judges the journals: every member's latest payload delivered, none before its due
(arrival >= due - SOAK_SKEW_MS, Redis and the consumer share this host's clock; x-delay-relayed-at >=
x-delay-due-at, within SOAK_STAMP_SLACK_MS), nothing delivered that a successful cancel
took out before its due, duplicates against the window threads x batch-size x 4 per disruptive fault (kill -9,
SIGTERM, Redis freeze, broker node stop), nothing left in Redis, and delay_relay_relayed_total summed over every
relay lifetime (each scraped before it is stopped) against the distinct publishes received.

Exit status: 0 pass; 1 loss, early delivery or a cancelled entry delivered; 3 only duplicates over the window or
entries left in Redis; 2 set-up failure. Prints the fault timeline and the figures (every finding in full in SOAK_DIR/lost.txt, early.txt, cancelled-delivered.txt, unknown-payload.txt); keeps everything (journals, relay
logs, broker logs, timeline) in SOAK_DIR.

Environment:
  SOAK_DIR            working directory (default target/soak/<UTC time>)
  SOAK_RELAYS         relay processes (default 2; 2 or 3)
  SOAK_RATE           producer operations per second (default 200)
  SOAK_FAULT_EVERY    seconds between faults (default 20)
  SOAK_FAULTS         space-separated subset of: kill9 sigterm redis-stop rabbit-node notify reshard pause replay
                      unbind (default: all)
  SOAK_FAULT_ORDER    a fixed sequence of faults (names as above), repeated, instead of the shuffled deck; e.g.
                      "unbind reshard notify pause notify pause notify pause notify" leaves dead letters in
                      shards 8-15 and retires them (16 -> 8) long before the final replay
  SOAK_SEED           seed of the fault choice and the producer (default: time)
  SOAK_RABBIT_PORTS   the cluster's AMQP ports (default "5691 5692 5693"; the fault tests use 5681-5683)
  SOAK_DRAIN_MAX      longest drain after the load, seconds (default 240)
  SOAK_SKEW_MS        clock skew allowed between Redis time and arrival time (default 20; same host)
  SOAK_STAMP_SLACK_MS how far x-delay-relayed-at may read before x-delay-due-at (default 0: the relay stamps at
                      least the pop's own Redis TIME); such deliveries are counted and printed, and beyond the
                      slack judged early
Needs: java 17, redis-server, redis-cli, rabbitmq-server/rabbitmqctl, curl, python3 (free ports).
USAGE
}

MINUTES=10
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help|help) usage; exit 0 ;;
    --smoke) MINUTES=2; shift ;;
    *)
      [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] || { echo "soak: MINUTES must be a whole number >= 1, got '$1'" >&2; exit 2; }
      MINUTES=$1; shift ;;
  esac
done

cd "$(dirname "$0")/.."
ROOT=$(pwd)
for tool in java javac redis-server redis-cli rabbitmq-server curl python3; do
  command -v "$tool" >/dev/null 2>&1 || { echo "soak: '$tool' is not installed; the soak needs it" >&2; exit 2; }
done

RELAYS=${SOAK_RELAYS:-2}
RATE=${SOAK_RATE:-200}
FAULT_EVERY=${SOAK_FAULT_EVERY:-20}
FAULTS=${SOAK_FAULTS:-"kill9 sigterm redis-stop rabbit-node notify reshard pause replay unbind"}
SEED=${SOAK_SEED:-$(date +%s)}
DRAIN_MAX=${SOAK_DRAIN_MAX:-240}
SKEW_MS=${SOAK_SKEW_MS:-20}
STAMP_SLACK_MS=${SOAK_STAMP_SLACK_MS:-0}
export RABBIT_CLUSTER_PORTS=${SOAK_RABBIT_PORTS:-"5691 5692 5693"}
# Node names of their own (soak<pid>n1@localhost, ...): Erlang node names are unique per host, and other runs of
# rabbit-cluster.sh (the fault tests) may have nodes up at the same time.
export RABBIT_CLUSTER_NODE_PREFIX=soak$$n
DIR=${SOAK_DIR:-$ROOT/target/soak/$(date -u +%Y%m%dT%H%M%SZ)}
export RABBIT_CLUSTER_DIR=$DIR/rabbit-cluster
BUSINESS=soak
TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d " \n") # relay.ops.token needs 16+ characters
THREADS=2
BATCH=100
RANDOM=$SEED
[ "$RELAYS" -ge 2 ] && [ "$RELAYS" -le 3 ] || { echo "soak: SOAK_RELAYS must be 2 or 3, got '$RELAYS'" >&2; exit 2; }

mkdir -p "$DIR/metrics"
TIMELINE=$DIR/timeline.txt
: >"$TIMELINE"
ms() { date +%s%3N; }
stamp() { date -u +%H:%M:%S; }
log() { echo "soak $(stamp): $*"; }
event() { # what detail...
  printf '%s %s %-12s %s\n' "$(stamp)" "$(ms)" "$1" "${*:2}" >>"$TIMELINE"
  log "$1 ${*:2}"
}
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# ---- everything this script starts, and its clean-up ------------------------------------------------------------
REDIS_PID="" PRODUCER_PID="" CONSUMER_PID="" CLUSTER_UP=false
declare -a RELAY_PID RELAY_LIFE MGMT_PORT
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  set +e
  [ -n "$PRODUCER_PID" ] && kill "$PRODUCER_PID" 2>/dev/null
  for i in $(seq 1 "$RELAYS"); do
    [ -n "${RELAY_PID[$i]:-}" ] && kill -9 "${RELAY_PID[$i]}" 2>/dev/null
  done
  touch "$DIR/consumer.stop"
  [ -n "$CONSUMER_PID" ] && { sleep 1; kill "$CONSUMER_PID" 2>/dev/null; }
  if [ -n "$REDIS_PID" ]; then
    kill -CONT "$REDIS_PID" 2>/dev/null
    kill "$REDIS_PID" 2>/dev/null
  fi
  if [ "$CLUSTER_UP" = true ]; then
    RABBIT_CLUSTER_LOGS_TO=$DIR/rabbit-logs scripts/rabbit-cluster.sh down >/dev/null 2>&1
  fi
  wait 2>/dev/null
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- build ------------------------------------------------------------------------------------------------------
JAR=$(ls relay-app/target/relay-app-*-exec.jar 2>/dev/null | head -n 1 || true)
if [ -z "$JAR" ]; then
  log "building the exec jar (./mvnw -q -pl relay-app -am package -DskipTests)"
  ./mvnw -B -q -pl relay-app -am package -DskipTests
  JAR=$(ls relay-app/target/relay-app-*-exec.jar | head -n 1)
fi
# The tool compiles against the exec jar's own libraries (relay-api's producer, Lettuce, the AMQP client).
mkdir -p "$DIR/lib" "$DIR/classes"
unzip -q -o -j "$JAR" 'BOOT-INF/lib/*' -d "$DIR/lib"
javac -nowarn -cp "$DIR/lib/*" -d "$DIR/classes" bench/soak/SoakTool.java 2>&1 | grep -v '^Note:' || true
cat >"$DIR/tool-logback.xml" <<'XML'
<configuration>
  <appender name="E" class="ch.qos.logback.core.ConsoleAppender"><encoder><pattern>%d %-5level %logger{20} %msg%n</pattern></encoder></appender>
  <root level="WARN"><appender-ref ref="E"/></root>
</configuration>
XML
# the checker holds every journal line of a 30-minute run in memory (360,000 writes, 280,000 deliveries): 256 MiB ran
# out in its last step; producer and consumer keep the small heap
tool() { java -Xmx"${TOOL_HEAP:-256m}" -XX:+UseSerialGC -Dlogback.configurationFile="$DIR/tool-logback.xml" \
  -cp "$DIR/classes:$DIR/lib/*" io.delayrelay.soak.SoakTool "$@"; }

# ---- servers ----------------------------------------------------------------------------------------------------
REDIS_PORT=$(free_port)
mkdir -p "$DIR/redis"
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$DIR/redis" --appendonly yes --appendfsync everysec \
  --save "" --notify-keyspace-events Kz --logfile "$DIR/redis/redis.log" &
REDIS_PID=$!
for _ in $(seq 1 40); do
  [ "$(redis-cli -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ] && break
  sleep 0.25
done
[ "$(redis-cli -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ] || { echo "soak: redis-server did not start" >&2; exit 2; }
rcli() { redis-cli -p "$REDIS_PORT" "$@"; }

for port in $RABBIT_CLUSTER_PORTS; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "soak: port $port is taken (another cluster?); set SOAK_RABBIT_PORTS" >&2
    exit 2
  fi
done
CLUSTER_UP=true
scripts/rabbit-cluster.sh up
RABBIT_ADDRESSES=$(for p in $RABBIT_CLUSTER_PORTS; do printf '127.0.0.1:%s,' "$p"; done)
RABBIT_ADDRESSES=${RABBIT_ADDRESSES%,}
NODES=$(i=0; for _ in $RABBIT_CLUSTER_PORTS; do i=$((i + 1)); printf '%s%s ' "$RABBIT_CLUSTER_NODE_PREFIX" "$i"; done)

tool consume --rabbit-ports "$(echo "$RABBIT_CLUSTER_PORTS" | tr ' ' ',')" --exchange soak.x --queue soak.q \
  --routing-key soak --stop-file "$DIR/consumer.stop" --journal "$DIR/delivered.txt" \
  --ready-file "$DIR/consumer.ready" >"$DIR/consumer.log" 2>&1 &
CONSUMER_PID=$!
for _ in $(seq 1 120); do
  [ -f "$DIR/consumer.ready" ] && break
  kill -0 "$CONSUMER_PID" 2>/dev/null || { cat "$DIR/consumer.log" >&2; exit 2; }
  sleep 0.5
done
[ -f "$DIR/consumer.ready" ] || { echo "soak: the consumer did not start" >&2; cat "$DIR/consumer.log" >&2; exit 2; }

# ---- relays -----------------------------------------------------------------------------------------------------
SHARDS=16
write_config() {
  cat >"$DIR/relay.yaml" <<YAML
# The soak's relay configuration; the reshard fault edits 'shards' and POSTs /actuator/refresh to every relay.
spring:
  data:
    redis:
      port: $REDIS_PORT
  rabbitmq:
    addresses: $RABBIT_ADDRESSES
relay:
  ops:
    token: $TOKEN
  businesses:
    $BUSINESS:
      exchange: soak.x
      routing-key: soak
      declare-exchange: true
      shards: $SHARDS
      threads: $THREADS
      batch-size: $BATCH
      lease: 10s
      publish-timeout: 5s
      max-attempts: 4
      retry-delay: 500ms
YAML
}
write_config

start_relay() { # index
  local i=$1
  RELAY_LIFE[$i]=$((${RELAY_LIFE[$i]:-0} + 1))
  java -Xmx320m -XX:+UseSerialGC -jar "$JAR" --spring.main.banner-mode=off \
    --spring.config.additional-location="file:$DIR/relay.yaml" \
    --server.port=0 --management.server.port="${MGMT_PORT[$i]}" \
    --management.endpoints.web.exposure.include=health,info,prometheus,relay,refresh \
    --relay.fleet.instance-id="soak-relay-$i" \
    >"$DIR/relay-$i-life-${RELAY_LIFE[$i]}.log" 2>&1 &
  RELAY_PID[$i]=$!
}
ready() { # index
  [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:${MGMT_PORT[$1]}/actuator/health/readiness")" = 200 ]
}
await_ready() { # index seconds
  local n
  for ((n = 0; n < $2 * 2; n++)); do
    ready "$1" && return 0
    kill -0 "${RELAY_PID[$1]}" 2>/dev/null || return 1
    sleep 0.5
  done
  return 1
}
# The relayed counter of relay i's current life, kept per life: restarts reset counters, so the total is the sum of
# each life's last scrape (scraped every tick and just before each stop).
scrape() { # index
  local i=$1 v
  v=$(curl -s --max-time 3 "http://127.0.0.1:${MGMT_PORT[$i]}/actuator/prometheus" 2>/dev/null \
    | awk '/^delay_relay_relayed_total\{/ && /business="'$BUSINESS'"/ {s += $NF; f = 1} END {if (f) printf "%d", s}') || true
  [ -n "$v" ] && echo "$v" >"$DIR/metrics/relay-$i-life-${RELAY_LIFE[$i]}"
  return 0
}
ops() { # index method path [body]
  curl -s --max-time 10 -X "$2" -H 'Content-Type: application/json' -H "X-Relay-Token: $TOKEN" \
    "http://127.0.0.1:${MGMT_PORT[$1]}/actuator/relay/$BUSINESS${3}" ${4:+-d "$4"} 2>&1 | tr -d '\n' | cut -c1-200
}
for i in $(seq 1 "$RELAYS"); do
  MGMT_PORT[$i]=$(free_port)
  start_relay "$i"
done
for i in $(seq 1 "$RELAYS"); do
  await_ready "$i" 180 || { echo "soak: relay $i did not become ready; its log:" >&2; tail -n 40 "$DIR/relay-$i-life-1.log" >&2; exit 2; }
done
event start "relays ${RELAYS} (pids ${RELAY_PID[*]}; management ports ${MGMT_PORT[*]}), redis :$REDIS_PORT (pid $REDIS_PID)," \
  "rabbit cluster $RABBIT_CLUSTER_PORTS, load ${MINUTES} min at ~${RATE} ops/s, fault every ~${FAULT_EVERY}s, seed $SEED"

# ---- load and faults --------------------------------------------------------------------------------------------
tool produce --redis-port "$REDIS_PORT" --business "$BUSINESS" --rate "$RATE" --seconds "$((MINUTES * 60))" \
  --seed "$SEED" --stop-file "$DIR/producer.stop" --journal "$DIR/produced.txt" >"$DIR/producer.log" 2>&1 &
PRODUCER_PID=$!

DISRUPTIVE=0
backlog() { # scheduled in-flight dead over every shard key of the business
  local s=0 f=0 d=0 key
  while read -r key; do
    case "$key" in
      *"}:inflight") f=$((f + $(rcli ZCARD "$key"))) ;;
      *"}:dead") d=$((d + $(rcli ZCARD "$key"))) ;;
      "delayqueue:$BUSINESS:"[0-9]*) s=$((s + $(rcli ZCARD "$key"))) ;;
    esac
  done < <(rcli --scan --pattern "*delayqueue:$BUSINESS:*")
  echo "$s $f $d"
}
declare -A FAULT_COUNT
pick() { local a=($1); echo "${a[$((RANDOM % ${#a[@]}))]}"; }
# Faults are drawn from a shuffled deck of every kind, dealt again when empty: each kind comes up as often as the
# others (a short run still sees every one), in an order the seed decides.
DECK=()
draw() {
  if [ "${#DECK[@]}" -eq 0 ] && [ -n "${SOAK_FAULT_ORDER:-}" ]; then
    DECK=($SOAK_FAULT_ORDER) # a fixed order, dealt again and again: a reproduction of one interleaving
  elif [ "${#DECK[@]}" -eq 0 ]; then
    local a=($FAULTS) j k t
    for ((j = ${#a[@]} - 1; j > 0; j--)); do k=$((RANDOM % (j + 1))); t=${a[$j]}; a[$j]=${a[$k]}; a[$k]=$t; done
    DECK=("${a[@]}")
  fi
  FAULT=${DECK[0]}
  DECK=("${DECK[@]:1}")
}
# A restarted relay is not waited for (on a loaded box start-up takes 30-130 s): the soak goes on, and the moment it
# is ready is logged by note_ready. Stopping and restarting a relay that is still starting is part of the chaos.
declare -a STARTED_AT
restart_relay() { # index
  local i=$1
  start_relay "$i"
  STARTED_AT[$i]=$(ms)
}
note_ready() {
  local i
  for i in $(seq 1 "$RELAYS"); do
    if [ -n "${STARTED_AT[$i]:-}" ] && ready "$i"; then
      # A config center pushes a change to an instance that read its configuration before the change; here that is
      # a refresh once the relay is ready (it may have read relay.yaml before the last reshard rewrote it).
      local changed
      changed=$(curl -s --max-time 30 -X POST "http://127.0.0.1:${MGMT_PORT[$i]}/actuator/refresh" | tr -d '\n' | cut -c1-80)
      event "  ready" "relay $i life ${RELAY_LIFE[$i]} (pid ${RELAY_PID[$i]}) ready $(( $(ms) - STARTED_AT[$i] )) ms after its start; refresh: $changed"
      STARTED_AT[$i]=""
    fi
  done
}
# A relay whose ops endpoint answers (ready), at random; empty when none is.
ready_relay() {
  local i cand=()
  for i in $(seq 1 "$RELAYS"); do ready "$i" && cand+=("$i"); done
  [ "${#cand[@]}" -gt 0 ] && echo "${cand[$((RANDOM % ${#cand[@]}))]}"
  return 0
}
fault() { # name
  local f=$1 i node secs t0 out
  i=$(ready_relay)
  if [ -z "$i" ]; then
    case "$f" in
      kill9|sigterm) i=$((RANDOM % RELAYS + 1)) ;; # every relay is starting: hit one of them anyway
      pause|replay|reshard) event "$f" "skipped: no relay ready"; return 0 ;;
    esac
  fi
  FAULT_COUNT[$f]=$(( ${FAULT_COUNT[$f]:-0} + 1 ))
  case "$f" in
    kill9)
      scrape "$i"
      event kill9 "relay $i (pid ${RELAY_PID[$i]}, life ${RELAY_LIFE[$i]})"
      kill -9 "${RELAY_PID[$i]}" 2>/dev/null; wait "${RELAY_PID[$i]}" 2>/dev/null || true
      DISRUPTIVE=$((DISRUPTIVE + 1))
      restart_relay "$i" ;;
    sigterm)
      scrape "$i"
      t0=$(ms)
      event sigterm "relay $i (pid ${RELAY_PID[$i]}, life ${RELAY_LIFE[$i]})"
      kill -TERM "${RELAY_PID[$i]}" 2>/dev/null; wait "${RELAY_PID[$i]}" 2>/dev/null || true
      event "  exited" "relay $i after $(( $(ms) - t0 )) ms"
      DISRUPTIVE=$((DISRUPTIVE + 1))
      restart_relay "$i" ;;
    redis-stop)
      secs=$((5 + RANDOM % 16))
      event redis-stop "SIGSTOP redis for ${secs}s"
      kill -STOP "$REDIS_PID"; sleep "$secs"; kill -CONT "$REDIS_PID"
      event "  redis-cont" "SIGCONT"
      DISRUPTIVE=$((DISRUPTIVE + 1)) ;;
    rabbit-node)
      node=$(pick "$NODES")
      t0=$(ms)
      event rabbit-node "stop $node"
      out=$(scripts/rabbit-cluster.sh stop-node "$node" 2>&1 | tail -n 1)
      event "  stopped" "$node after $(( $(ms) - t0 )) ms: $out"
      sleep 5
      out=$(scripts/rabbit-cluster.sh start-node "$node" 2>&1 | tail -n 1)
      event "  started" "$node after $(( $(ms) - t0 )) ms in all: $out"
      DISRUPTIVE=$((DISRUPTIVE + 1)) ;;
    notify)
      secs=$((10 + RANDOM % 11))
      event notify "notify-keyspace-events \"\" for ${secs}s"
      rcli CONFIG SET notify-keyspace-events "" >/dev/null; sleep "$secs"
      rcli CONFIG SET notify-keyspace-events Kz >/dev/null
      event "  notify" "restored Kz" ;;
    reshard)
      local from=$SHARDS
      if [ "$SHARDS" = 16 ]; then SHARDS=8; else SHARDS=16; fi
      write_config
      out=""
      for j in $(seq 1 "$RELAYS"); do
        ready "$j" || { out+="relay $j: not ready (starts with the file's count); "; continue; }
        out+="relay $j: $(curl -s --max-time 30 -X POST "http://127.0.0.1:${MGMT_PORT[$j]}/actuator/refresh" | tr -d '\n' | cut -c1-80); "
      done
      event reshard "shards $from -> $SHARDS by file + /actuator/refresh ($out)"
      sleep 3
      event "  K:meta" "$(rcli HGETALL "delayqueue:$BUSINESS:meta" | paste -sd' ' | cut -c1-200)" ;;
    pause)
      secs=$((3 + RANDOM % 8))
      event pause "relay $i: $(ops "$i" POST /pause '{"by":"soak"}' | grep -o '"paused":[a-z]*' | head -n 1) for ${secs}s"
      sleep "$secs"
      # the resume goes to any ready relay: the pause is fleet-wide
      i=$(ready_relay); i=${i:-1}
      event "  resume" "relay $i: $(ops "$i" POST /resume '{"by":"soak"}' | grep -o '"paused":[a-z]*' | head -n 1)" ;;
    replay)
      event replay "relay $i (dead before: $(backlog | cut -d' ' -f3)): $(ops "$i" POST /replay '{"all":true}')" ;;
    unbind)
      secs=$((5 + RANDOM % 6))
      event unbind "queue binding removed for ${secs}s"
      out=$(tool unbind --rabbit-ports "$(echo "$RABBIT_CLUSTER_PORTS" | tr ' ' ',')" --exchange soak.x --queue soak.q \
        --routing-key soak --seconds "$secs" 2>&1 | tail -n 1)
      event "  bound" "$out; dead now $(backlog | cut -d' ' -f3)" ;;
  esac
}

START=$(ms)
NEXT=$((START + FAULT_EVERY * 1000))
while kill -0 "$PRODUCER_PID" 2>/dev/null; do
  now=$(ms)
  note_ready
  if [ "$now" -ge "$NEXT" ]; then
    for i in $(seq 1 "$RELAYS"); do scrape "$i"; done
    draw
    fault "$FAULT" || event "  FAULT ERROR" "$FAULT failed (status $?); continuing"
    # the next fault ~FAULT_EVERY s after this one started (+-25%), at least 5 s after this one ended
    NEXT=$(( now + FAULT_EVERY * 750 + RANDOM % (FAULT_EVERY * 500 + 1) ))
    [ "$NEXT" -ge $(( $(ms) + 5000 )) ] || NEXT=$(( $(ms) + 5000 ))
  fi
  sleep 1
done
wait "$PRODUCER_PID" || true
PRODUCER_PID=""
event load-end "$(tail -n 1 "$DIR/producer.log")"

# ---- undo, drain, stop ------------------------------------------------------------------------------------------
for i in $(seq 1 "$RELAYS"); do
  kill -0 "${RELAY_PID[$i]}" 2>/dev/null || { event "  DEAD" "relay $i exited by itself: restarting it"; restart_relay "$i"; }
  await_ready "$i" 240 || event "  NOT READY" "relay $i not ready 240 s after the load ended"
done
note_ready
rcli CONFIG SET notify-keyspace-events Kz >/dev/null
event resume "$(ops 1 POST /resume '{"by":"soak-end"}' | grep -o '"paused":[a-z]*' | head -n 1)"
t0=$(ms)
last_count=-1 quiet_since=$(ms)
while :; do
  read -r s f d < <(backlog)
  if [ "$d" -gt 0 ]; then
    out=$(ops 1 POST /replay '{"all":true}')
    # logged when something changed: dead letters the endpoint cannot reach would repeat the same line every 2 s
    [ "$d" = "${last_dead:-}" ] && [[ "$out" == *'"replayed":0'* ]] || event replay-end "dead $d: $out"
    last_dead=$d
  fi
  count=$(wc -l <"$DIR/delivered.txt")
  if [ "$count" != "$last_count" ]; then last_count=$count; quiet_since=$(ms); fi
  if [ "$s" = 0 ] && [ "$f" = 0 ] && [ "$d" = 0 ] && [ $(( $(ms) - quiet_since )) -ge 10000 ]; then
    event drained "after $(( ($(ms) - t0) / 1000 )) s: nothing scheduled, in flight or dead; $count deliveries"
    break
  fi
  if [ $(( $(ms) - t0 )) -ge $((DRAIN_MAX * 1000)) ]; then
    event "DRAIN TIMEOUT" "after ${DRAIN_MAX}s: scheduled $s, in flight $f, dead $d; $count deliveries"
    break
  fi
  sleep 2
done
for i in $(seq 1 "$RELAYS"); do
  scrape "$i"
  kill -TERM "${RELAY_PID[$i]}" 2>/dev/null || true
done
for i in $(seq 1 "$RELAYS"); do wait "${RELAY_PID[$i]}" 2>/dev/null || true; RELAY_PID[$i]=""; done
touch "$DIR/consumer.stop"
wait "$CONSUMER_PID" 2>/dev/null || true
CONSUMER_PID=""
event stopped "relays and consumer stopped"

# ---- report -----------------------------------------------------------------------------------------------------
RELAYED=$(cat "$DIR"/metrics/relay-* 2>/dev/null | awk '{s += $1} END {printf "%d", s}')
WINDOW=$(( THREADS * BATCH * 4 * (DISRUPTIVE > 0 ? DISRUPTIVE : 1) ))
echo
echo "== fault timeline ($TIMELINE) =="
cat "$TIMELINE"
echo
echo "== faults =="
for f in $FAULTS; do printf '%s %s  ' "$f" "${FAULT_COUNT[$f]:-0}"; done
echo
echo "relay lives: $(for i in $(seq 1 "$RELAYS"); do printf 'relay %s: %s  ' "$i" "${RELAY_LIFE[$i]}"; done)"
echo "duplicate window: threads $THREADS x batch-size $BATCH x 4 x $DISRUPTIVE disruptive fault(s) = $WINDOW"
set +e
TOOL_HEAP=1g tool check --produced "$DIR/produced.txt" --delivered "$DIR/delivered.txt" --duplicate-window "$WINDOW" \
  --skew-ms "$SKEW_MS" --stamp-slack-ms "$STAMP_SLACK_MS" --redis-port "$REDIS_PORT" --business "$BUSINESS" --relayed-metric "${RELAYED:-0}" \
  --out-dir "$DIR" \
  | tee "$DIR/check.txt"
status=${PIPESTATUS[0]}
set -e
echo "soak: logs and journals in $DIR"
exit "$status"
