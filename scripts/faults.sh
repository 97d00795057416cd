#!/usr/bin/env bash
# Runs the fault-injection suite (relay-app tests tagged "faults") and prints each scenario's figures.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/faults.sh [--help] [-Dtest=ClassName ...]

Builds relay-app through the reactor (relay-api from this work tree, never from ~/.m2; the exec jar is what the
kill -9 and node-loss scenarios start as a separate JVM), then runs the tests tagged "faults"
(./mvnw test -Pfaults -pl relay-app -am) and prints relay-app/target/faults/figures.txt: sent, delivered,
duplicates, lost, early and max lag per scenario. Every scenario asserts lost = 0, early = 0 (relayed-at >= due-at,
Redis time) and duplicates within the bound its figures line names. `./mvnw verify` (scripts/test.sh, CI) runs the
same suite after packaging. Extra arguments go to Maven (e.g. -Dtest=BadEntriesTest).

  1 kill -9 of a relay JVM mid-drain of 200,000 messages, restart   (KillNineMidDrainTest)
  2 RabbitMQ stopped for 30 s (rabbitmqctl stop_app/start_app)      (BrokerOutageTest)
    (a RabbitMQ node of the test's own on a free port, under relay-app/target/faults/rabbit-outage-*)
  3 Redis (own redis-server, AOF, free port) kill -9 + restart      (RedisRestartTest)
  4 nacks (x-overflow=reject-publish) and confirm timeouts            (NacksAndConfirmTimeoutsTest)
  5 bad entries written by other programs                            (BadEntriesTest)
  6 a RabbitMQ cluster node stopped mid-drain of a 5,000/s stream    (RabbitNodeLossTest)
    (3 nodes from scripts/rabbit-cluster.sh on free ports, quorum queue; the cluster is stopped afterwards)
  7 20,000 ids by id + re-schedules while the relay JVM is killed -9
    twice and restarted: latest payload of every id, stable ids       (ChurnKillNineTest)
  8 three relay instances dividing 12 shards: one popper per shard
    (Redis MONITOR), kill -9 of one and SIGSTOP of another, their
    shards taken over within seat-ttl x 4/3 (4 s at a 3 s TTL)        (FleetDivisionTest)
  9 cold tier: Redis (own redis-server, AOF) kill -9 while cold
    blocks are promoted, restart: each id hot or cold, never both     (ColdRedisRestartTest)
 10 cold tier: three relays, two killed -9 during demotions and
    promotions: no id hot and cold at once at any check               (ColdFleetKillTest)
 11 cold tier: Redis (own server, AOF) kill -9 while entries are
    demoted; the AOF at the kill, and torn copies of it, hold each
    move whole                                                        (ColdDemotionRedisRestartTest)
 12 cold tier on a Redis Cluster of its own: scripts on a slot in
    migration, step by step; the slots of 3 cold shards migrated to
    a new master while the relay moves and a producer cancels         (ColdMigratingSlotTest,
                                                                       ColdClusterReshardTest)
 13 cold tier: CLUSTER FAILOVER there and back during moves          (ColdClusterFailoverTest)
 14 pop-ahead (lead 250 ms): kill -9 of an exec-jar relay holding
    entries popped ahead: none lost, none early, duplicates only of
    what it held                                                      (LeadKillNineTest)

Needs the local Redis (6379) and RabbitMQ (5672; scripts/services.sh up), redis-server, rabbitmqctl and
rabbitmq-server. It never stops the shared servers. Takes about 14-18 minutes on 2 cores. Per-run relay logs: relay-app/target/faults/*.log, the
cluster nodes' logs: relay-app/target/faults/rabbit-cluster/.
USAGE
}

case "${1:-}" in
  -h|--help|help) usage; exit 0 ;;
esac

cd "$(dirname "$0")/.."
for tool in redis-server redis-cli rabbitmqctl rabbitmq-server; do
  command -v "$tool" >/dev/null 2>&1 || { echo "faults: '$tool' is not installed; the fault suite needs it" >&2; exit 2; }
done
scripts/services.sh status >/dev/null || { echo "faults: Redis/RabbitMQ not running; run scripts/services.sh up" >&2; exit 2; }

OFFLINE=()
[ -n "${MAVEN_OFFLINE:-}" ] && OFFLINE=(-o)
# Through the reactor (-pl relay-app -am): relay-api comes from this work tree, nothing is installed into ~/.m2.
# Package first: the scenarios start the exec jar, which the test phase alone does not build.
./mvnw -B -q "${OFFLINE[@]}" package -DskipTests -pl relay-app -am
rm -f relay-app/target/faults/figures.txt
status=0
# -Dgroups=faults keeps relay-api's (untagged) tests out of this run; relay-app's faults profile sets its own groups.
./mvnw -B "${OFFLINE[@]}" test -Pfaults -pl relay-app -am -Dgroups=faults -Dsurefire.failIfNoSpecifiedTests=false \
  "$@" || status=$?
echo
echo "Fault figures (relay-app/target/faults/figures.txt):"
cat relay-app/target/faults/figures.txt 2>/dev/null || echo "(none written)"
if [ "$status" -ne 0 ]; then
  echo "faults: FAILED (see relay-app/target/surefire-reports and relay-app/target/faults/*.log)" >&2
fi
exit "$status"
