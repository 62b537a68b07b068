# What the runner scripts share (sourced, not run): the machine line (all three), and the CPU suite's
# definition, used by bench/run-cpu.sh (this machine) and bench/run-cpu-gpu-host.sh (the GPU machine's 16
# idle cores), so both run exactly the same benchmarks with the same options.
# One script run = two JMH runs: every CPU benchmark with one thread, then the rows with a scaling target
# (and their C and bare-downcall references) with -t 16 (thread-scoped states: a batch or tensor per thread).
# bench/results.py pairs rows across the two JSON files (names with '@t16' come from the second).
# About 6 minutes in all (one fork, -wi 3 -i 5 of 1 s, params restricted to what the targets need).

CPU_INCLUDE='DowncallBaselineBenchmark|B2ExportImportBenchmark|B3ZeroCopyBenchmark\.cpu|B4DLPackBenchmark'
CPU_T16_INCLUDE='B2ExportImportBenchmark\.(view|viewRead|viewDefaultRead|streamBatchDefault|cStreamBaseline|intoRoot|cBaseline|bareDowncall)$|B4DLPackBenchmark\.(exportImportRead(Confined|Shared|Default)|cBaseline)$'
CPU_OPTS="-f 1 -wi 3 -w 1 -i 5 -r 1 -p columns=16 -p rows=1024 -prof gc"

# One line naming the machine: CPU model, logical CPUs, kernel, and the GPU where nvidia-smi answers.
machine_line() {
  local cpu gpu name driver gen genmax width
  cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
  gpu=$(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current \
        --format=csv,noheader 2>/dev/null | head -1 || true)
  printf '%s, %s logical CPUs, %s %s' "$cpu" "$(nproc)" "$(uname -s)" "$(uname -r)"
  if [[ -n "$gpu" ]]; then
    IFS=',' read -r name driver gen genmax width <<< "$gpu"
    printf '; GPU%s, driver%s, PCIe Gen%s (max Gen%s) x%s' "$name" "$driver" "${gen# }" "${genmax# }" "${width# }"
  fi
  printf '; run %s UTC\n' "$(date -u '+%Y-%m-%d %H:%M')"
}

# run_cpu_suite LAUNCHER OUTDIR NAME
#   LAUNCHER: the command that starts JMH (a java -jar line, or 'bash .gpu/bench.sh')
#   OUTDIR:   where the JSON goes, as it should be recorded (e.g. 'bench' or '$OUT', expanded when run)
#   NAME:     writes OUTDIR/NAME.json (1 thread), OUTDIR/NAME-t16.json (-t 16) and OUTDIR/NAME.cmd (both commands)
# Extra JMH options go through JMH_OPTS (both runs).
run_cpu_suite() {
  local launcher=$1 outdir=$2 name=$3
  local c1="$launcher '$CPU_INCLUDE' $CPU_OPTS ${JMH_OPTS:-} -rf json -rff $outdir/$name.json"
  local c16="$launcher '$CPU_T16_INCLUDE' $CPU_OPTS -t 16 ${JMH_OPTS:-} -rf json -rff $outdir/$name-t16.json"
  local dir
  dir=$(eval echo "$outdir")
  mkdir -p "$dir"
  printf '%s\n%s\n' "$c1" "$c16" > "$dir/$name.cmd"
  echo "$c1"
  eval "$c1"
  echo "$c16"
  eval "$c16"
}
