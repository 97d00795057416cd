#!/usr/bin/env bash
# Declares a queue bound to a business's exchange and routing key, then prints what the relay delivers there.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/consume.sh [--business NAME] [--exchange X] [--routing-key R] [--queue Q] [--count N] [--help]

Declares queue Q (durable) bound to exchange X with routing key R, then fetches and prints up to N messages
with their relay headers, acknowledging them. Run it before produce.sh's messages fall due, or afterwards:
the queue keeps them. The exchange must exist (the docker-compose demo's relay declares it at start).

  --business NAME    business name (default order-timeout), used for the queue name
  --exchange X       exchange (default demo.delayed, the compose demo's)
  --routing-key R    routing key (default order.timeout)
  --queue Q          queue (default demo.<business>)
  --count N          messages to fetch (default 100)

Environment: RABBIT_HOST (127.0.0.1), RABBIT_MGMT_PORT (15672, used by rabbitmqadmin), RABBIT_PORT (5672, used by
pika), RABBIT_USER (guest), RABBIT_PASSWORD (guest), RABBIT_VHOST (/).
Needs one of: rabbitmqadmin (management plugin's CLI), or python3 with the pika package.
USAGE
}

BUSINESS=order-timeout EXCHANGE=demo.delayed ROUTING_KEY=order.timeout QUEUE="" COUNT=100
while [ $# -gt 0 ]; do
  case "$1" in
    --business) BUSINESS=${2:?--business needs a value}; shift 2 ;;
    --exchange) EXCHANGE=${2:?--exchange needs a value}; shift 2 ;;
    --routing-key) ROUTING_KEY=${2:?--routing-key needs a value}; shift 2 ;;
    --queue) QUEUE=${2:?--queue needs a value}; shift 2 ;;
    --count) COUNT=${2:?--count needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$COUNT" =~ ^[0-9]+$ ]] || { echo "error: --count must be a whole number, got '$COUNT'" >&2; exit 2; }
QUEUE=${QUEUE:-demo.$BUSINESS}
HOST=${RABBIT_HOST:-127.0.0.1} USER_NAME=${RABBIT_USER:-guest} PASSWORD=${RABBIT_PASSWORD:-guest} VHOST=${RABBIT_VHOST:-/}

if command -v rabbitmqadmin >/dev/null 2>&1; then
  admin() {
    rabbitmqadmin -H "$HOST" -P "${RABBIT_MGMT_PORT:-15672}" -u "$USER_NAME" -p "$PASSWORD" -V "$VHOST" "$@"
  }
  admin declare queue name="$QUEUE" durable=true >/dev/null || {
    echo "error: the RabbitMQ management API at $HOST:${RABBIT_MGMT_PORT:-15672} did not accept the request (see above)." >&2
    echo "  rabbitmqadmin needs the management plugin: rabbitmq-plugins enable rabbitmq_management" >&2
    echo "  (the rabbitmq:3-management image of docker-compose.yml has it), or install pika: pip install pika" >&2
    exit 1
  }
  admin declare binding source="$EXCHANGE" destination="$QUEUE" routing_key="$ROUTING_KEY" >/dev/null
  echo "queue $QUEUE bound to $EXCHANGE/$ROUTING_KEY; fetching up to $COUNT message(s)"
  admin get queue="$QUEUE" ackmode=ack_requeue_false count="$COUNT"
elif command -v python3 >/dev/null 2>&1 && python3 -c 'import pika' 2>/dev/null; then
  python3 - "$HOST" "${RABBIT_PORT:-5672}" "$USER_NAME" "$PASSWORD" "$VHOST" "$EXCHANGE" "$ROUTING_KEY" "$QUEUE" \
    "$COUNT" <<'PY'
import sys
import pika

host, port, user, password, vhost, exchange, routing_key, queue, count = sys.argv[1:]
params = pika.ConnectionParameters(host, int(port), vhost, pika.PlainCredentials(user, password))
with pika.BlockingConnection(params) as connection:
    channel = connection.channel()
    channel.queue_declare(queue, durable=True)
    channel.queue_bind(queue, exchange, routing_key)
    print(f"queue {queue} bound to {exchange}/{routing_key}; fetching up to {count} message(s)")
    for _ in range(int(count)):
        method, properties, body = channel.basic_get(queue, auto_ack=False)
        if method is None:
            break
        print(body.decode("utf-8", "replace"), properties.message_id, properties.headers)
        channel.basic_ack(method.delivery_tag)
PY
else
  {
    echo "error: neither rabbitmqadmin nor python3 with pika is available. Install one of:"
    echo "  apt-get install -y rabbitmq-server    (ships rabbitmqadmin on Debian/Ubuntu)"
    echo "  curl -o rabbitmqadmin http://localhost:15672/cli/rabbitmqadmin    (served by the management plugin)"
    echo "  pip install pika                      (then this script uses python3)"
  } >&2
  exit 127
fi
