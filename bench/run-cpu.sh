#!/usr/bin/env bash
# Runs the CPU suite (bench/suites.sh: one single-thread JMH run and one -t 16 run) on this machine and
# rewrites bench/RESULTS.md (bench/write-results.sh). Writes bench/results-cpu.json, results-cpu-t16.json,
# results-cpu.cmd and machine-cpu.txt. About 6 minutes.
#   bench/run-cpu.sh              build bench/target/benchmarks.jar first (mvn -o -q -DskipTests package)
#   NO_BUILD=1 bench/run-cpu.sh   use the jar as it is (JAR=... to run another copy)
# Extra JMH options go through JMH_OPTS.
set -euo pipefail
cd "$(dirname "$0")/.."
JAVA=${JAVA:-/usr/lib/jvm/temurin-25-jdk-amd64/bin/java}
JAR=${JAR:-bench/target/benchmarks.jar}
if [[ -z "${NO_BUILD:-}" ]]; then
  mvn -B -o -q -DskipTests -pl bench -am package
fi
source bench/suites.sh
# -Dsun.misc.unsafe.memory.access=allow: what --sun-misc-unsafe-memory-access=allow sets, which a JDK 22 refuses
FLAGS="--enable-native-access=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED -Dsun.misc.unsafe.memory.access=allow -Dio.netty.tryReflectionSetAccessible=true"
machine_line > bench/machine-cpu.txt
cat bench/machine-cpu.txt
run_cpu_suite "$JAVA $FLAGS -jar $JAR" bench results-cpu
bench/write-results.sh
