#!/usr/bin/env bash
# Runs the CPU benchmark suite here and rewrites bench/RESULTS.md (CPU section from this run, GPU section
# from bench/results-gpu.json if the lead has copied one back, else "pending").
#   bench/run-cpu.sh              build bench/target/benchmarks.jar first (mvn -o -q -DskipTests package)
#   NO_BUILD=1 bench/run-cpu.sh   use the jar as it is (JAR=... to run another copy)
# Extra JMH options go through JMH_OPTS (e.g. JMH_OPTS="-p columns=16").
set -euo pipefail
cd "$(dirname "$0")/.."
JAVA=${JAVA:-/usr/lib/jvm/temurin-25-jdk-amd64/bin/java}
JAR=${JAR:-bench/target/benchmarks.jar}
if [[ -z "${NO_BUILD:-}" ]]; then
  mvn -B -o -q -DskipTests package
fi
FLAGS="--enable-native-access=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -Dio.netty.tryReflectionSetAccessible=true"
INCLUDE='DowncallBaselineBenchmark|B2ExportImportBenchmark|B3ZeroCopyBenchmark.cpu|B4DLPackBenchmark'
OPTS="-f 1 -wi 5 -w 1 -i 5 -r 1 -prof gc ${JMH_OPTS:-}"
CMD="$JAVA $FLAGS -jar $JAR '$INCLUDE' $OPTS -rf json -rff bench/results-cpu.json"
echo "$CMD"
eval "$CMD"
bench/write-results.sh "$CMD"
