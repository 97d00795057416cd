/**
 * The benchmark harness behind {@code scripts/bench.sh}: contenders, scenarios and the report.
 */
package io.delayrelay.bench;
