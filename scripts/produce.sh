#!/usr/bin/env bash
# Schedules demo messages for a business with plain redis-cli, following the documented Redis contract.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/produce.sh [--business NAME] [--count N] [--delay SECONDS] [--source-key K] [--prefix TEXT] [--help]

Schedules N demo messages, each due DELAY seconds from now (Redis TIME), the way any non-Java producer can:
  shards M  = HGET K:meta shards            (16 when the relay has not written it yet)
  shard     = CRC32(UTF-8 bytes of the message) mod M, unsigned
  ZADD K:<shard> <due-epoch-ms> <message>   then   PUBLISH K:wake "<shard>:<due-epoch-ms>"

  --business NAME   business name (default order-timeout, the docker-compose demo business)
  --count N         messages to schedule (default 10)
  --delay SECONDS   delay from now, may be fractional (default 5)
  --source-key K    source key (default delayqueue:<business>)
  --prefix TEXT     message text prefix (default demo-<epoch-ms>-); messages are <prefix><i>

Environment: REDIS_HOST (127.0.0.1), REDIS_PORT (6379), REDISCLI_AUTH (password, if any).
Needs: redis-cli, python3 (CRC32).
USAGE
}

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "error: $1 is not installed. $2" >&2; exit 127; }
}

BUSINESS=order-timeout COUNT=10 DELAY=5 SOURCE_KEY="" PREFIX=""
while [ $# -gt 0 ]; do
  case "$1" in
    --business) BUSINESS=${2:?--business needs a value}; shift 2 ;;
    --count) COUNT=${2:?--count needs a value}; shift 2 ;;
    --delay) DELAY=${2:?--delay needs a value}; shift 2 ;;
    --source-key) SOURCE_KEY=${2:?--source-key needs a value}; shift 2 ;;
    --prefix) PREFIX=${2:?--prefix needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$COUNT" =~ ^[0-9]+$ ]] || { echo "error: --count must be a whole number, got '$COUNT'" >&2; exit 2; }
[[ "$DELAY" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "error: --delay must be a number of seconds, got '$DELAY'" >&2; exit 2; }

need redis-cli "Install it: apt-get install -y redis-tools (Debian/Ubuntu) or brew install redis."
need python3 "Install it: apt-get install -y python3."

K=${SOURCE_KEY:-delayqueue:$BUSINESS}
case "$K" in *'{'*|*'}'*) echo "error: source key '$K' may not contain '{' or '}'" >&2; exit 2 ;; esac
rcli() { redis-cli -h "${REDIS_HOST:-127.0.0.1}" -p "${REDIS_PORT:-6379}" --no-raw "$@"; }
raw() { redis-cli -h "${REDIS_HOST:-127.0.0.1}" -p "${REDIS_PORT:-6379}" --raw "$@"; }

M=$(raw HGET "$K:meta" shards)
[[ "$M" =~ ^[1-9][0-9]*$ ]] || M=16

# Redis TIME: seconds and microseconds; the relay compares due scores with Redis time, never a host clock.
mapfile -t NOW < <(raw TIME)
[ "${#NOW[@]}" -ge 2 ] || { echo "error: no answer from Redis at ${REDIS_HOST:-127.0.0.1}:${REDIS_PORT:-6379}" >&2; exit 1; }
NOW_MS=$(( NOW[0] * 1000 + NOW[1] / 1000 ))
DUE=$(python3 -c 'import sys; print(int(sys.argv[1]) + round(float(sys.argv[2]) * 1000))' "$NOW_MS" "$DELAY")
PREFIX=${PREFIX:-demo-$NOW_MS-}

for ((i = 1; i <= COUNT; i++)); do
  MSG="$PREFIX$i"
  SHARD=$(python3 -c 'import sys, zlib; print(zlib.crc32(sys.argv[1].encode("utf-8")) % int(sys.argv[2]))' "$MSG" "$M")
  rcli ZADD "$K:$SHARD" "$DUE" "$MSG" >/dev/null
  rcli PUBLISH "$K:wake" "$SHARD:$DUE" >/dev/null
  echo "scheduled $MSG -> $K:$SHARD due $DUE"
done
echo "$COUNT message(s) for business '$BUSINESS' ($M shards) due in ${DELAY}s at epoch ms $DUE"
