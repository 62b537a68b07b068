#!/usr/bin/env bash
# Runs the GPU benchmark suite on the GPU machine, from the repository root, with the staged runtime and
# class folders (../shared/gpu/stage, then .gpu/bench.sh: no fat jar needed). Writes into $OUT:
# results-gpu.json (JMH), machine-gpu.txt (CPU, GPU, driver, link, date), results-gpu.cmd (the command) and
# gpu-run.log. Copy the first three into bench/ here and run bench/write-results.sh to fill the GPU section
# of bench/RESULTS.md. About 7 minutes. Extra JMH options go through JMH_OPTS.
# The CPU suite on the same machine's cores is bench/run-cpu-gpu-host.sh.
set -euo pipefail
export OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
[[ -f .gpu/bench.sh ]] || { echo "no .gpu/bench.sh: run ../shared/gpu/stage here first and carry .gpu along" >&2; exit 1; }
source bench/suites.sh
INCLUDE='B3ZeroCopyBenchmark.cuda|B5EventHandoffBenchmark|B6CopyBenchmark|B6BatchBenchmark|B7AllocationBenchmark'
OPTS="-f 1 -wi 2 -w 1 -i 5 -r 1 -foe false ${JMH_OPTS:-}"
CMD="bash .gpu/bench.sh '$INCLUDE' $OPTS -rf json -rff \$OUT/results-gpu.json"
printf '%s\n' "$CMD" > "$OUT/results-gpu.cmd"
machine_line > "$OUT/machine-gpu.txt"
cat "$OUT/machine-gpu.txt"
echo "$CMD"
eval "$CMD" 2>&1 | tee "$OUT/gpu-run.log"
