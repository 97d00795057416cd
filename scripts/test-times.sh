#!/usr/bin/env bash
# Prints the test classes of the last build that took longer than a threshold (default 10 s), slowest first, from
# the build's own reports (surefire and failsafe XML under */target/). docs/contributing/test-suite.md keeps the
# table of where each long class spends its time; run this after scripts/test.sh to refresh its figures.
# Usage: scripts/test-times.sh [min seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
min="${1:-10}"
shopt -s nullglob
reports=(*/target/surefire-reports/TEST-*.xml */target/failsafe-reports/TEST-*.xml)
if [ ${#reports[@]} -eq 0 ]; then
  echo "no test reports under */target/: run scripts/test.sh first" >&2
  exit 1
fi
printf '| class | lane | tests | time (s) |\n|---|---|---:|---:|\n'
for f in "${reports[@]}"; do
  head -c 2000 "$f" | tr '\n' ' ' | grep -o '<testsuite [^>]*>' | head -1 | {
    read -r line || exit 0
    name=$(sed -E 's/.* name="([^"]*)".*/\1/' <<<"$line")
    time=$(sed -E 's/.* time="([^"]*)".*/\1/' <<<"$line")
    tests=$(sed -E 's/.* tests="([^"]*)".*/\1/' <<<"$line")
    case "$f" in *failsafe-reports*) lane=IT ;; *) lane=surefire ;; esac
    echo "$time ${name##*.} $lane $tests"
  }
done | awk -v min="$min" '$1 + 0 >= min' | sort -rn | awk '{ printf "| `%s` | %s | %s | %.1f |\n", $2, $3, $4, $1 }'
