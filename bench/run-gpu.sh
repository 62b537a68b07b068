#!/usr/bin/env bash
# Runs the GPU benchmark suite on the GPU machine, from the repository root, with the staged runtime
# (.gpu/java.sh, .gpu/cp/benchmarks.jar). Writes into $OUT: results-gpu.json (JMH), machine-gpu.txt (CPU,
# GPU, driver, link, date), results-gpu.cmd (the command) and gpu-run.log. Copy the first three into bench/
# here and run bench/write-results.sh to fill the GPU section of bench/RESULTS.md. About 7 minutes.
# Extra JMH options go through JMH_OPTS.
set -euo pipefail
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
JAR=${JAR:-.gpu/cp/benchmarks.jar}
INCLUDE='B3ZeroCopyBenchmark.cuda|B5EventHandoffBenchmark|B6CopyBenchmark|B7AllocationBenchmark'
OPTS="-f 1 -wi 2 -w 1 -i 5 -r 1 -foe false ${JMH_OPTS:-}"
CMD="bash .gpu/java.sh -jar $JAR '$INCLUDE' $OPTS -rf json -rff \$OUT/results-gpu.json"
printf '%s\n' "$CMD" > "$OUT/results-gpu.cmd"
{
  cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
  gpu=$(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current --format=csv,noheader 2>/dev/null | head -1 || true)
  IFS=',' read -r name driver gen genmax width <<< "$gpu"
  printf '%s, %s logical CPUs, %s %s; GPU%s, driver%s, PCIe Gen%s (max Gen%s) x%s; run %s UTC\n' \
    "$cpu" "$(nproc)" "$(uname -s)" "$(uname -r)" "$name" "$driver" "${gen# }" "${genmax# }" "${width# }" "$(date -u '+%Y-%m-%d %H:%M')"
} > "$OUT/machine-gpu.txt"
cat "$OUT/machine-gpu.txt"
echo "$CMD"
eval "$CMD" 2>&1 | tee "$OUT/gpu-run.log"
