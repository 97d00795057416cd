#!/usr/bin/env bash
# Runs every test, the fault suite included, against real Redis and RabbitMQ: starts the local services when
# needed, then ./mvnw verify (unit and server tests, then after packaging the fault suite and the *IT tests).
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/test.sh [--quick] [extra Maven arguments]

Makes sure Redis (127.0.0.1:6379) and RabbitMQ (127.0.0.1:5672) are up (scripts/services.sh up), then runs
./mvnw -B verify, which runs in this order:
  1. every module's tests except the fault suite and the *IT tests (surefire, test phase; ~3.5 min on 2 cores);
  2. after packaging, relay-app's fault suite (faults/*Test, tagged "faults": kill -9 mid-drain, broker and Redis
     outages, three instances dividing the shards (kill -9 and SIGSTOP hand-over), a RabbitMQ node loss, nacks and
     confirm timeouts, bad entries, churn, the cold tier under kills, restarts and reshards) and the *IT tests, which
     start the exec jar just built, in one pool (failsafe; ~7.5 min on 2 cores, its timing lane included). The fault tests stop only servers of
     their own (a private RabbitMQ node, a private redis-server, a 3-node RabbitMQ cluster on free ports), never the
     shared ones; figures in relay-app/target/faults/.
Each step runs its tests in JVM forks at once (five, then four; C1 only), longest first, then its tests tagged
"timing" one at a time (-Dtest.forks=N / -Dit.forks=N set the forks; 1 and 1: everything one at a time). The whole
run took 10.5-11 min on 2 cores (fresh clones, 2026-11-30; longer when the machine is slow);
docs/contributing/test-suite.md has the per-class times and what was cut; scripts/test-times.sh prints the slow
classes of the last run and when each lane began and ended. -DskipFaults=true leaves the fault suite out (a
quick local run; CI never sets it); scripts/faults.sh runs it alone. Nothing is skipped silently: a missing server
or tool fails its test with an install hint; only NacosReloadIT skips, without NACOS_ADDR. For ReadmeRecipesTest
(runs the producers of examples/producers/) it also installs Python's redis and pika packages (Debian python3-redis,
python3-pika, when root) and runs `npm ci` in examples/producers. The tests talk to the real servers
(REDIS_HOST/REDIS_PORT, RABBIT_HOST/RABBIT_PORT override where); with neither local servers nor Docker they fail
with a message saying how to start them.
--quick runs step 1 alone (./mvnw -B test: unit and server tests, no fault suite, no *IT), a developer's inner
loop; CI and a check before a merge run the whole suite. Per-class times: docs/contributing/test-suite.md.
Example: scripts/test.sh -pl relay-app -Dtest=DeliveryTimingTest
USAGE
}

goal=verify
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  --quick) goal=test; shift ;;
esac
cd "$(dirname "$0")/.."
command -v java >/dev/null 2>&1 || { echo "java (17+) is required but not found on PATH" >&2; exit 1; }
scripts/services.sh up

# The helm module validates docker-compose.yml with Debian's docker-compose (offline: `config -q`).
if ! command -v docker-compose >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing docker-compose (Debian package) to validate docker-compose.yml..."
    (apt-get update -qq && apt-get install -y -qq --no-install-recommends docker-compose >/dev/null) \
      || echo "could not install docker-compose; the compose validation test will say how to install it" >&2
  else
    echo "docker-compose is missing: install it (apt-get install --no-install-recommends docker-compose);" \
      "the compose validation test fails without it" >&2
  fi
fi

# ReadmeRecipesTest runs the producers of examples/producers/: Python needs the `redis` package, Node the lock file's
# packages in examples/producers/ (ioredis, crc-32); LatePolicyIT's consumer needs Python's `pika` (/usr/bin/python3).
# Without them those tests fail saying how to install them.
pymissing=()
/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || pymissing+=(python3-redis)
/usr/bin/python3 -c 'import pika' >/dev/null 2>&1 || pymissing+=(python3-pika)
if [ ${#pymissing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing ${pymissing[*]} (Debian packages) for the Python producer example and LatePolicyIT's consumer..."
    (apt-get install -y -qq --no-install-recommends "${pymissing[@]}" >/dev/null 2>&1 \
      || (apt-get update -qq && apt-get install -y -qq --no-install-recommends "${pymissing[@]}" >/dev/null)) \
      || echo "could not install ${pymissing[*]}; ReadmeRecipesTest and LatePolicyIT will say how to install them" >&2
  else
    echo "Python packages missing: apt-get install ${pymissing[*]};" \
      "ReadmeRecipesTest and LatePolicyIT fail without them" >&2
  fi
fi
if command -v npm >/dev/null 2>&1; then
  if [ ! -f examples/producers/node_modules/.package-lock.json ] \
    || [ examples/producers/package-lock.json -nt examples/producers/node_modules/.package-lock.json ]; then
    (cd examples/producers && npm ci --no-audit --no-fund --loglevel=error) \
      || echo "npm ci in examples/producers failed; ReadmeRecipesTest will say how to install it" >&2
  fi
else
  echo "node/npm are missing: ReadmeRecipesTest needs Node 18+ and 'npm ci' in examples/producers" >&2
fi

# ConsoleBrowserTest drives Debian's chromium through chromium-driver; the helm module checks the alert rules with
# promtool (Debian package prometheus). Without them those tests fail saying what to install.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing ${missing[*]} (Debian packages) for the console's browser test and the alert rule tests..."
    (apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
      || (apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null)) \
      || echo "could not install ${missing[*]}; the tests that need them will say how to install them" >&2
  else
    echo "${missing[*]} missing: apt-get install --no-install-recommends ${missing[*]};" \
      "ConsoleBrowserTest and the promtool rule tests fail without them" >&2
  fi
fi

case " $* " in
  *relay.schema.write*) echo "test.sh: -Drelay.schema.write regenerates the schema it checks; run it by hand, not here" >&2
    exit 2 ;;
esac
./mvnw -B "$goal" "$@"
