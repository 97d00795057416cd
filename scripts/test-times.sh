#!/usr/bin/env bash
# Prints the test classes of the last build that took longer than a threshold (default 10 s), slowest first, from
# the build's own reports (surefire and failsafe XML under */target/). docs/contributing/test-suite.md keeps the
# table of where each long class spends its time; run this after scripts/test.sh to refresh its figures. Then it
# prints when each lane of that run began and ended (seconds from the first test class).
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
# One line per report: finished (epoch s), time (s), class (simple name), tests, stage (module_test_phase or
# module_after_packaging), lane (forks, timing: tagged "timing" in relay-app's sources, or all: other modules).
timing=$(grep -rl --include='*.java' '@Tag("timing")' relay-app/src/test/java 2>/dev/null | xargs -r -n1 basename | sed 's/\.java$//' | sort -u)
suites() {
  for f in "${reports[@]}"; do
    head -c 2000 "$f" | tr '\n' ' ' | grep -o '<testsuite [^>]*>' | head -1 | {
      read -r line || exit 0
      name=$(sed -E 's/.* name="([^"]*)".*/\1/' <<<"$line")
      name=${name##*.}
      module=${f%%/*}
      case "$f" in *failsafe-reports*) stage="${module}_after_packaging" ;; *) stage="${module}_test_phase" ;; esac
      lane=forks
      if grep -qx "$name" <<<"$timing"; then lane=timing; fi
      [ "$module" = relay-app ] || lane=all
      echo "$(stat -c %Y "$f") $(sed -E 's/.* time="([^"]*)".*/\1/' <<<"$line") $name" \
        "$(sed -E 's/.* tests="([^"]*)".*/\1/' <<<"$line") $stage $lane"
    }
  done
}
all=$(suites)

printf '| class | lane | tests | time (s) |\n|---|---|---:|---:|\n'
awk -v min="$min" '$2 + 0 >= min { print $2, $3, ($5 ~ /after_packaging/ ? "IT" : "surefire"), $4 }' <<<"$all" \
  | sort -rn | awk '{ printf "| `%s` | %s | %s | %.1f |\n", $2, $3, $4, $1 }'

# The lanes of that run: when each began and ended (a class began at its report's time minus its elapsed time).
echo
printf '| stage | lane | classes | began (s) | ended (s) | wall (min) |\n|---|---|---:|---:|---:|---:|\n'
awk '{ end = $1; begin = $1 - $2; k = $5 " " $6; n[k]++
       if (!(k in b) || begin < b[k]) b[k] = begin; if (!(k in e) || end > e[k]) e[k] = end
       if (first == "" || begin < first) first = begin }
     END { for (k in n) print b[k] - first, e[k] - first, n[k], k }' <<<"$all" \
  | sort -n | awk '{ gsub(/_/, " ", $4); printf "| %s | %s | %d | %d | %d | %.1f |\n", $4, $5, $3, $1, $2, ($2 - $1) / 60 }'
