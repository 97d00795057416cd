#!/usr/bin/env bash
# A producer in bash with redis-cli alone: the shard rule (CRC32 mod M, earlier counts from K:meta's history) and
# the contract's Lua scripts (schedule, reschedule, cancel by id; a plain ZADD with its wake-up). Run it, or source
# it for the functions: examples/producers/delay.sh schedule_by_id delayqueue:order-timeout order-1001 '{"n":1}' 60000
#
# Needs redis-cli, gzip and od (for the CRC32). Connects to REDIS_HOST:REDIS_PORT (default 127.0.0.1:6379; a password
# goes in REDISCLI_AUTH); reads the scripts from CONTRACT_DIR (default: the repository's contract/ folder).
# Commands (K = the source key, e.g. delayqueue:order-timeout; delays in milliseconds):
#   shard M KEY...                          the shard of each KEY among M, one a line
#   schedule_plain K MESSAGE DELAY_MS       prints the due time
#   schedule_by_id K ID MESSAGE DELAY_MS [EXPIRY [NAME VALUE]...]
#                                           prints the due time; EXPIRY ('' none, epoch ms, +MS after due) and AMQP
#                                           headers (e.g. traceparent) are per-message options (contract v2)
#   reschedule_by_id K ID DELAY_MS          prints the new due time, -1 when not scheduled
#   cancel_by_id K ID                       prints 1 when cancelled, 0 when not scheduled
# They read K:meta on every call; a busy producer caches it for a few seconds (relay-api: 5 s).

CONTRACT_DIR=${CONTRACT_DIR:-$(dirname "${BASH_SOURCE[0]}")/../../contract}
redis-cli() { command redis-cli -h "${REDIS_HOST:-127.0.0.1}" -p "${REDIS_PORT:-6379}" "$@"; }

crc32() { printf '%s' "$1" | gzip -c | tail -c 8 | od -An -tu4 -N4 --endian=little | tr -d ' '; }
shard_of() { echo $(( $(crc32 "$1") % $2 )); }                         # shard_of KEY M
shards_of() {  # shards_of K KEY: the shard under the current count first, then under earlier counts (history)
  local meta m seen=' ' i; mapfile -t meta < <(redis-cli HMGET "$1:meta" shards history)
  for m in "${meta[0]:-16}" ${meta[1]//,/ }; do
    i=$(shard_of "$2" "$m"); [[ $seen == *" $i "* ]] || { seen+="$i "; echo "$i"; }
  done
}
contract() {  # contract SCRIPT K i ARGV...: runs contract/SCRIPT.lua on shard i of K
  local script=$1 k=$2 i=$3; shift 3
  redis-cli EVALSHA "$(redis-cli SCRIPT LOAD "$(cat "$CONTRACT_DIR/$script.lua")")" 5 \
    "$k:$i" "{$k:$i}:payloads" "{$k:$i}:inflight" "{$k:$i}:attempts" "{$k:$i}:dead" "$@"
}

schedule_plain() {  # K MESSAGE DELAY_MS: a plain ZADD, due time from Redis TIME; prints the due time
  local m t i due; m=$(redis-cli HGET "$1:meta" shards); i=$(shard_of "$2" "${m:-16}")
  mapfile -t t < <(redis-cli TIME); due=$(( t[0] * 1000 + t[1] / 1000 + $3 ))
  redis-cli ZADD "$1:$i" "$due" "$2" >/dev/null
  redis-cli PUBLISH "$1:wake" "$i:$due" >/dev/null    # optional: without it the relay sees it within max-idle
  echo "$due"
}
schedule_by_id() {  # K ID MESSAGE DELAY_MS [EXPIRY [NAME VALUE]...]; prints the due time
  local shards i k=$1 id=$2 message=$3 delay=$4; shift 4
  for ((i = 2; i <= $#; i += 2)); do   # the header names (the script refuses them too)
    local name=${!i}
    [[ ${name,,} != x-delay-* ]] || { echo "header $name is refused: the relay sets x-delay-* headers" >&2; return 1; }
  done
  mapfile -t shards < <(shards_of "$k" "$id")
  contract schedule "$k" "${shards[0]}" "$id" after "$delay" "$k:wake" "${shards[0]}" "$message" "$@"
  set -- "$k" "$id"
  for i in "${shards[@]:1}"; do contract cancel "$1" "$i" "$2" >/dev/null; done   # a copy from before a reshard
}
reschedule_by_id() {  # K ID DELAY_MS; prints the new due time, -1 when not scheduled
  local i due
  for i in $(shards_of "$1" "$2"); do
    due=$(contract reschedule "$1" "$i" "$2" after "$3" "$1:wake" "$i"); [ "$due" = -1 ] || break
  done
  echo "$due"
}
cancel_by_id() {  # K ID; prints 1 when cancelled, 0 when not scheduled
  local i removed=0
  for i in $(shards_of "$1" "$2"); do [ "$(contract cancel "$1" "$i" "$2")" = 1 ] && removed=1; done
  echo "$removed"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then   # run, not sourced
  set -euo pipefail
  command=${1:-}; shift || true
  case "$command" in
    shard) m=$1; shift; for key in "$@"; do shard_of "$key" "$m"; done ;;
    schedule_plain|schedule_by_id|reschedule_by_id|cancel_by_id) "$command" "$@" ;;
    *) sed -n '2,16s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
  esac
fi
