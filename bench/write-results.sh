#!/usr/bin/env bash
# Rewrites bench/RESULTS.md from bench/results-cpu.json and, if present, bench/results-gpu.json, through
# bench/results.py with the spec files bench/ratios-cpu.tsv and bench/ratios-gpu.tsv, then appends the
# hand-written notes (bench/results-notes.md: missed targets and why).
#   bench/write-results.sh "CPU command" ["GPU command"]
# The commands are recorded in the table; they default to the ones last recorded in bench/results-*.cmd.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 1 ]] && printf '%s\n' "$1" > bench/results-cpu.cmd
[[ $# -ge 2 ]] && printf '%s\n' "$2" > bench/results-gpu.cmd
OUT=bench/RESULTS.md
cat > "$OUT" <<'HEAD'
# devicebridge benchmark results

Every figure is a ratio against a baseline measured in the same JMH run (same fork settings, same JVM,
same machine, same minutes); absolute times are given for context only and are noisy. The 95% confidence
interval is a bootstrap over the measurement iterations of both sides. "speedup >= X" rows give
baseline time / measured time; all other rows measured / baseline. Produced by `bench/run-cpu.sh`
(CPU suite, here) and `bench/run-gpu.sh` (GPU suite, on the GPU machine), through `bench/results.py`
with the specs `bench/ratios-cpu.tsv` and `bench/ratios-gpu.tsv`. See the notes at the end for every
missed target.
HEAD
if [[ -f bench/results-cpu.json ]]; then
  python3 bench/results.py --spec bench/ratios-cpu.tsv --title "CPU suite" \
    --command "$(cat bench/results-cpu.cmd 2>/dev/null || echo bench/run-cpu.sh)" "$OUT" bench/results-cpu.json
else
  printf '\n## CPU suite\n\nPending: run `bench/run-cpu.sh`.\n' >> "$OUT"
fi
if [[ -f bench/results-gpu.json ]]; then
  python3 bench/results.py --spec bench/ratios-gpu.tsv --title "GPU suite" --machine "$(cat bench/machine-gpu.txt 2>/dev/null || echo "not recorded")" \
    --command "$(cat bench/results-gpu.cmd 2>/dev/null || echo bench/run-gpu.sh)" "$OUT" bench/results-gpu.json
else
  printf '\n## GPU suite\n\nPending: the lead runs `bench/run-gpu.sh` on the GPU machine (H100) and copies its\n`results-gpu.json` and `machine-gpu.txt` back to `bench/`, then runs `bench/write-results.sh`.\nThe rows it will fill are those of `bench/ratios-gpu.tsv`.\n' >> "$OUT"
fi
[[ -f bench/results-notes.md ]] && { echo; cat bench/results-notes.md; } >> "$OUT"
echo "wrote $OUT"
