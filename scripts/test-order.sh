#!/usr/bin/env bash
# Writes the run order of relay-app's two parallel lanes from the last build's reports: each test's time, in the
# format of Surefire's statistics file (runOrder=balanced hands the longest classes out first, so no fork is left
# with a long class at the end). They are committed as relay-app/src/test/run-order/.surefire-<lane>; the build
# copies each to relay-app/.surefire-<lane> (ignored by git) when that copy is missing or older, and Surefire and
# Failsafe update the copy after every run. Refresh the committed files after a class grows or shrinks a lot:
#   scripts/test.sh && scripts/test-order.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=relay-app/src/test/run-order
mkdir -p "$out"
write() { # lane, reports dir
  local lane=$1 dir=$2
  shopt -s nullglob
  local reports=("$dir"/TEST-*.xml)
  if [ ${#reports[@]} -eq 0 ]; then
    echo "no reports in $dir: run scripts/test.sh first" >&2
    exit 1
  fi
  python3 - "$out/.surefire-$lane" "${reports[@]}" <<'PY'
import sys, xml.etree.ElementTree as ET
target, reports = sys.argv[1], sys.argv[2:]
lines = []
for report in reports:
    suite = ET.parse(report).getroot()
    for case in suite.iter('testcase'):
        ms = int(float(case.get('time') or 0) * 1000)
        # the suite's name is the class's full name (jqwik reports a test case's class by its simple name)
        lines.append(f"1,{ms},{suite.get('name')},{case.get('name')}")
open(target, 'w').write('\n'.join(sorted(lines)) + '\n')
print(f"{target}: {len(lines)} tests")
PY
}
# the timing executions run one test at a time: their reports are in the same folders, but their order does not matter
write test-phase relay-app/target/surefire-reports
write after-package relay-app/target/failsafe-reports
