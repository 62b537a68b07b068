#!/usr/bin/env python3
"""Turns JMH JSON results into bench/RESULTS.md rows: each benchmark beside its baseline from the same
script run, the ratio with a bootstrap 95% confidence interval, and whether the target is met.

Usage: bench/results.py --spec bench/ratios.tsv --title "CPU suite" --command "..." [--command "..."]
                        [--machine "..."] OUT.md results.json...
The spec has one line per ratio: id, measured (Class.method[param=value,...]), baseline (same form, or "-"
for an absolute target), target (e.g. "<= 1.10", ">= 10", "-" for none), a description, and optionally a
metric; tab separated, '#' comments. The ratio is measured / baseline, except for a target written
"speedup >= X", where it is baseline / measured (how many times faster the measured code is). With the
baseline "-" the row compares the measured value itself with the target (e.g. "<= 1000" ns/op, or
"<= 2048" B/op with the metric gc.alloc.rate.norm). The optional sixth column names a secondary JMH metric
to compare instead of the primary score, e.g. "gc.alloc.rate.norm" (bytes allocated per operation, from
-prof gc; JMH's leading middle dot may be left out).

The JSON files of one script run are read together, so a row may pair benchmarks from two JMH runs of that
script run (the -t 16 run beside the single-thread run): a benchmark run with more than one thread is named
with the suffix "@tN" (Class.method[params]@t16), one run with a single thread has no suffix. The same name
in two files is an error (one script run measures each benchmark once).
Rows whose benchmarks are absent from the JSON are listed as 'not run'. Standard library only.
"""
import argparse, datetime, json, os, platform, random, re, subprocess, sys

def key(b):
    name = b["benchmark"].rsplit(".", 2)
    cls_method = name[-2] + "." + name[-1]
    params = b.get("params") or {}
    if params:
        cls_method += "[" + ",".join(f"{k}={params[k]}" for k in sorted(params)) + "]"
    threads = int(b.get("threads") or 1)
    if threads != 1:
        cls_method += f"@t{threads}"
    return cls_method

def metric(b, name):
    """The primary metric, or the secondary metric called name (with or without JMH's leading middle dot)."""
    if not name:
        return b["primaryMetric"]
    for k, v in (b.get("secondaryMetrics") or {}).items():
        if k.lstrip("\u00b7") == name.lstrip("\u00b7"):
            return v
    return None

def samples(m):
    raw = m.get("rawData") or []
    flat = [x for fork in raw for x in fork]
    return flat or [m["score"]]

UNIT_SECONDS = {"ns/op": 1e-9, "us/op": 1e-6, "\u00b5s/op": 1e-6, "ms/op": 1e-3, "s/op": 1.0}

def throughput(b, score, unit):
    """' (X GB/s)' for a copy benchmark (B6CopyBenchmark) with a 'bytes' parameter: one operation moves that
    many bytes."""
    size = (b.get("params") or {}).get("bytes") if b["benchmark"].rsplit(".", 2)[-2] == "B6CopyBenchmark" else None
    if not size or unit not in UNIT_SECONDS or not score:
        return ""
    return f" ({int(size) / (score * UNIT_SECONDS[unit]) / 1e9:.1f} GB/s)"

def bootstrap_mean(a, n=4000, seed=7):
    rnd = random.Random(seed)
    means = sorted(sum(rnd.choice(a) for _ in a) / len(a) for _ in range(n))
    return means[int(0.025 * n)], means[int(0.975 * n) - 1]

def bootstrap_ratio(a, b, n=4000, seed=7):
    rnd = random.Random(seed)
    ratios = []
    for _ in range(n):
        ma = sum(rnd.choice(a) for _ in a) / len(a)
        mb = sum(rnd.choice(b) for _ in b) / len(b)
        ratios.append(ma / mb if mb else float("inf"))
    ratios.sort()
    return ratios[int(0.025 * n)], ratios[int(0.975 * n) - 1]

def meets(ratio, target):
    m = re.match(r"\s*(?:speedup\s*)?(<=|>=)\s*([0-9.]+)", target or "")
    if not m:
        return "-"
    op, v = m.group(1), float(m.group(2))
    return "met" if (ratio <= v if op == "<=" else ratio >= v) else "MISSED"

def machine():
    cpu = platform.processor() or ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip(); break
    except OSError:
        pass
    desc = f"{cpu}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}"
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
        if gpu:
            n, d, g, w = [x.strip() for x in gpu.splitlines()[0].split(",")]
            desc += f"; GPU {n}, driver {d}, PCIe Gen{g} x{w}"
    except (OSError, subprocess.SubprocessError):
        pass
    return desc

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True)
    ap.add_argument("--title", required=True)
    ap.add_argument("--command", required=True, action="append",
                    help="the command of a JMH run (repeated for each run of one script run)")
    ap.add_argument("--machine", help="machine description to record instead of this machine's (e.g. the GPU machine's, "
                    "written there by bench/run-gpu.sh)")
    ap.add_argument("out")
    ap.add_argument("json", nargs="+")
    args = ap.parse_args()
    results, origin = {}, {}
    jvm = ""
    for path in args.json:
        for b in json.load(open(path)):
            k = key(b)
            if k in results:
                sys.exit(f"{k} is in both {origin[k]} and {path}: one script run measures each benchmark once")
            results[k], origin[k] = b, path
            jvm = f"{b.get('vmName', '')} {b.get('jdkVersion', '')}".strip()
    rows = []
    for line in open(args.spec):
        if not line.strip() or line.startswith("#"):
            continue
        rid, measured, baseline, target, desc, mname = (line.rstrip("\n").split("\t") + [""] * 6)[:6]
        mname = mname.strip()
        absolute = baseline.strip() == "-"
        shown = "-" if absolute else f"`{baseline}`"
        mb, bb = results.get(measured), (None if absolute else results.get(baseline))
        m, b = (mb and metric(mb, mname)), (bb and metric(bb, mname))
        label = f" ({mname})" if mname else ""
        if not m or (not absolute and not b):
            rows.append(f"| {rid} | {desc} | `{measured}`{label} | {shown} | not run | | {target} | not run |")
            continue
        unit = m["scoreUnit"]
        ms = m["score"]
        if absolute:
            lo, hi = bootstrap_mean(samples(m))
            rows.append(f"| {rid} | {desc} | `{measured}`{label} | - | **{ms:.4g} {unit}** | [{lo:.4g}, {hi:.4g}] | "
                        f"{target} | {meets(ms, target)} |")
            continue
        bs = b["score"]
        speedup = (target or "").strip().startswith("speedup")
        if speedup:
            ratio = bs / ms if ms else float("inf")
            lo, hi = bootstrap_ratio(samples(b), samples(m))
        else:
            ratio = ms / bs if bs else float("inf")
            lo, hi = bootstrap_ratio(samples(m), samples(b))
        rows.append(f"| {rid} | {desc} | `{measured}`{label} {ms:.4g} {unit}{'' if mname else throughput(mb, ms, unit)} | "
                    f"{shown} {bs:.4g} {unit}{'' if mname else throughput(bb, bs, unit)} | "
                    f"**{ratio:.3g}** | [{lo:.3g}, {hi:.3g}] | {target} | {meets(ratio, target)} |")
    with open(args.out, "a") as f:
        f.write(f"\n## {args.title}\n\n")
        f.write(f"- machine: {args.machine or machine()}\n- JVM: {jvm}\n"
                f"- tabulated: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC\n")
        for c in args.command:
            f.write(f"- command: `{c}`\n")
        f.write("\n| id | what | measured | baseline | ratio (or value) | 95% CI (bootstrap) | target | result |\n")
        f.write("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
        f.write("\n".join(rows) + "\n")
    print(f"wrote {len(rows)} rows to {args.out}")

if __name__ == "__main__":
    sys.exit(main())
