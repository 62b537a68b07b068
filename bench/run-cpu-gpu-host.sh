#!/usr/bin/env bash
# Runs the CPU suite (bench/suites.sh, the same benchmarks and options as bench/run-cpu.sh) on the GPU
# machine's 16 idle cores, from the repository root, with the staged runtime and class folders
# (../shared/gpu/stage, then .gpu/bench.sh: no fat jar needed; gcc there compiles the C baselines).
# Writes into $OUT: results-cpu-gpuhost.json (1 thread), results-cpu-gpuhost-t16.json (-t 16),
# results-cpu-gpuhost.cmd, machine-cpu-gpuhost.txt and cpu-gpuhost-run.log. Copy the first four into
# bench/ here and run bench/write-results.sh. About 6 minutes. Extra JMH options go through JMH_OPTS.
set -euo pipefail
export OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
[[ -f .gpu/bench.sh ]] || { echo "no .gpu/bench.sh: run ../shared/gpu/stage here first and carry .gpu along" >&2; exit 1; }
source bench/suites.sh
machine_line > "$OUT/machine-cpu-gpuhost.txt"
cat "$OUT/machine-cpu-gpuhost.txt"
run_cpu_suite "bash .gpu/bench.sh" '$OUT' results-cpu-gpuhost 2>&1 | tee "$OUT/cpu-gpuhost-run.log"
