#!/usr/bin/env bash
# Rewrites bench/RESULTS.md through bench/results.py, one section per suite whose JSON is in bench/:
#   CPU suite here               results-cpu.json + results-cpu-t16.json, machine-cpu.txt, results-cpu.cmd
#   CPU suite on the GPU machine results-cpu-gpuhost.json + results-cpu-gpuhost-t16.json,
#                                machine-cpu-gpuhost.txt, results-cpu-gpuhost.cmd (from bench/run-cpu-gpu-host.sh)
#   GPU suite                    results-gpu.json, machine-gpu.txt, results-gpu.cmd (from bench/run-gpu.sh)
# with the specs bench/ratios-cpu.tsv (both CPU sections) and bench/ratios-gpu.tsv, then appends the
# hand-written notes (bench/results-notes.md: missed targets and why).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/RESULTS.md
cat > "$OUT" <<'HEAD'
# devicebridge benchmark results

Every figure is a ratio against a baseline measured in the same script run (same fork settings, same JVM,
same machine, same minutes): a C implementation of the same work (`bench/src/main/c/b2_baseline.c`,
compiled at set-up and called in a loop through one FFM call), a bare no-op FFM downcall, arrow-c-data for
the same batch, or raw driver calls. Absolute times are given for context only and are noisy, except where
the target is itself absolute (baseline "-": nanoseconds or bytes per operation). The 95% confidence
interval is a bootstrap over the measurement iterations of both sides. "speedup >= X" rows give baseline
time / measured time; all other rows measured / baseline.

The CPU suite is one script run of two JMH runs (`bench/suites.sh`): every CPU benchmark with one thread,
then the benchmarks with a scaling target with `-t 16` (a batch or tensor per thread). `bench/results.py`
reads both JSON files of that script run together and pairs rows across them: a name ending in `@t16` is
from the 16-thread run, and a scaling row divides its time per operation by the same benchmark's
single-thread time. The CPU suite runs on the 2-core development machine (`bench/run-cpu.sh`) and on the
GPU machine's 16 idle cores (`bench/run-cpu-gpu-host.sh`); each section names its machine. The GPU suite
runs on the GPU machine (`bench/run-gpu.sh`). See the notes at the end for every missed target.
HEAD
# section TITLE SPEC NAME: tabulates bench/NAME.json (+ bench/NAME-t16.json) if present, else a pending line
section() {
  local title=$1 spec=$2 name=$3 how=$4
  local files=() cmds=()
  if [[ ! -f bench/$name.json ]]; then
    printf '\n## %s\n\nPending: %s\n' "$title" "$how" >> "$OUT"
    return
  fi
  files+=("bench/$name.json")
  [[ -f bench/$name-t16.json ]] && files+=("bench/$name-t16.json")
  local machine_file=bench/machine-${name#results-}.txt
  while IFS= read -r c; do [[ -n "$c" ]] && cmds+=(--command "$c"); done < <(cat "bench/$name.cmd" 2>/dev/null || true)
  [[ ${#cmds[@]} -gt 0 ]] || cmds=(--command "not recorded")
  python3 bench/results.py --spec "$spec" --title "$title" \
    --machine "$(cat "$machine_file" 2>/dev/null || echo "not recorded")" "${cmds[@]}" "$OUT" "${files[@]}"
}
section "CPU suite, development machine" bench/ratios-cpu.tsv results-cpu 'run `bench/run-cpu.sh`.'
section "CPU suite, GPU machine's CPU cores" bench/ratios-cpu.tsv results-cpu-gpuhost \
  'the lead runs `bench/run-cpu-gpu-host.sh` on the GPU machine and copies `results-cpu-gpuhost.json`, `results-cpu-gpuhost-t16.json`, `results-cpu-gpuhost.cmd` and `machine-cpu-gpuhost.txt` from `$OUT` to `bench/`, then runs `bench/write-results.sh`.'
section "GPU suite" bench/ratios-gpu.tsv results-gpu \
  'the lead runs `bench/run-gpu.sh` on the GPU machine and copies `results-gpu.json`, `results-gpu.cmd` and `machine-gpu.txt` from `$OUT` to `bench/`, then runs `bench/write-results.sh`. The rows it will fill are those of `bench/ratios-gpu.tsv`.'
[[ -f bench/results-notes.md ]] && { echo; cat bench/results-notes.md; } >> "$OUT"
echo "wrote $OUT"
