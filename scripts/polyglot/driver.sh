#!/usr/bin/env bash
# Runs one function of the README's shell recipe (extracted by ReadmeRecipesTest) and prints its result.
# Usage: driver.sh RECIPE_FILE COMMAND ARGS...   (run from the repository root: the recipe reads contract/)
#   shard M KEY...                  one shard per line
#   schedule_plain K MESSAGE DELAY_MS | schedule_by_id K ID MESSAGE DELAY_MS | reschedule_by_id K ID DELAY_MS
#   cancel_by_id K ID
set -euo pipefail
recipe=$1 command=$2; shift 2
# The recipe calls plain `redis-cli`; point it at the test's Redis the way the README suggests.
redis-cli() { command redis-cli -h "${REDIS_HOST:-127.0.0.1}" -p "${REDIS_PORT:-6379}" "$@"; }
# shellcheck source=/dev/null
source "$recipe"
case "$command" in
  shard) m=$1; shift; for key in "$@"; do shard_of "$key" "$m"; done ;;
  schedule_plain|schedule_by_id|reschedule_by_id|cancel_by_id) "$command" "$@" ;;
  *) echo "unknown command $command" >&2; exit 2 ;;
esac
