#!/usr/bin/env bash
# Runs every test against real Redis and RabbitMQ: starts the local services when needed, then ./mvnw verify.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/test.sh [extra Maven arguments]

Makes sure Redis (127.0.0.1:6379) and RabbitMQ (127.0.0.1:5672) are up (scripts/services.sh up), then runs
./mvnw -B verify. The tests talk to the real servers (REDIS_HOST/REDIS_PORT, RABBIT_HOST/RABBIT_PORT override
where); with neither local servers nor Docker they fail with a message saying how to start them.
Example: scripts/test.sh -pl relay-app -Dtest=DeliveryTimingTest
USAGE
}

case "${1:-}" in -h|--help) usage; exit 0 ;; esac
cd "$(dirname "$0")/.."
command -v java >/dev/null 2>&1 || { echo "java (17+) is required but not found on PATH" >&2; exit 1; }
scripts/services.sh up
./mvnw -B verify "$@"
