#!/usr/bin/env bash
# Runs the relay against local Redis and RabbitMQ; by default with the demo business, which schedules a few
# messages and prints each one as it arrives.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/run.sh [--no-demo] [-- extra Spring Boot arguments]

Starts local Redis and RabbitMQ when installed and not running (scripts/services.sh up), builds the relay if
needed and runs it. With the demo (default) a business "demo" relays to exchange "delay-relay.demo"; five
messages due 2..6 s ahead are scheduled and printed as they arrive, with their lag. Ctrl-C stops it.

  --no-demo   run only the relay, configured by relay-app/src/main/resources/delay-relay.yaml plus your
              arguments, e.g. scripts/run.sh --no-demo -- --spring.config.additional-location=file:my.yaml
  --rebuild   rebuild the jar even if it exists
USAGE
}

cd "$(dirname "$0")/.."
profile=demo
rebuild=false
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --no-demo) profile=""; shift ;;
    --rebuild) rebuild=true; shift ;;
    --) shift; break ;;
    *) break ;;
  esac
done

command -v java >/dev/null 2>&1 || { echo "java (17+) is required but not found on PATH" >&2; exit 1; }
scripts/services.sh up

jar=$(ls relay-app/target/relay-app-*-exec.jar 2>/dev/null | head -n 1 || true)
if [ -z "$jar" ] || [ "$rebuild" = true ]; then
  echo "building the relay (./mvnw -DskipTests package)..."
  ./mvnw -B -q -DskipTests package -pl relay-app -am
  jar=$(ls relay-app/target/relay-app-*-exec.jar | head -n 1)
fi

args=()
[ -n "$profile" ] && args+=("--spring.profiles.active=$profile")
exec java -jar "$jar" "${args[@]}" "$@"
