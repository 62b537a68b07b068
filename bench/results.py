#!/usr/bin/env python3
"""Turns JMH JSON results into bench/RESULTS.md rows: each benchmark beside its baseline from the same
run, the ratio with a bootstrap 95% confidence interval, and whether the target is met.

Usage: bench/results.py --spec bench/ratios.tsv --title "CPU suite" --command "..." OUT.md results.json...
The spec has one line per ratio: id, measured (Class.method[param=value,...]), baseline (same form),
target (e.g. "<= 1.10", ">= 10", "-" for none), and a description; tab separated, '#' comments.
Rows whose benchmarks are absent from the JSON are listed as 'not run'. Standard library only.
"""
import argparse, datetime, json, os, platform, random, re, subprocess, sys

def key(b):
    name = b["benchmark"].rsplit(".", 2)
    cls_method = name[-2] + "." + name[-1]
    params = b.get("params") or {}
    if params:
        cls_method += "[" + ",".join(f"{k}={params[k]}" for k in sorted(params)) + "]"
    return cls_method

def samples(b):
    raw = b["primaryMetric"].get("rawData") or []
    flat = [x for fork in raw for x in fork]
    return flat or [b["primaryMetric"]["score"]]

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
    m = re.match(r"\s*(<=|>=)\s*([0-9.]+)", target or "")
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
    ap.add_argument("--command", required=True)
    ap.add_argument("out")
    ap.add_argument("json", nargs="+")
    args = ap.parse_args()
    results = {}
    jvm = ""
    for path in args.json:
        for b in json.load(open(path)):
            results[key(b)] = b
            jvm = f"{b.get('vmName', '')} {b.get('jdkVersion', '')}".strip()
    rows = []
    for line in open(args.spec):
        if not line.strip() or line.startswith("#"):
            continue
        rid, measured, baseline, target, desc = (line.rstrip("\n").split("\t") + [""] * 5)[:5]
        m, b = results.get(measured), results.get(baseline)
        if not m or not b:
            rows.append(f"| {rid} | {desc} | `{measured}` | `{baseline}` | not run | | {target} | not run |")
            continue
        unit = m["primaryMetric"]["scoreUnit"]
        ms, bs = m["primaryMetric"]["score"], b["primaryMetric"]["score"]
        ratio = ms / bs if bs else float("inf")
        lo, hi = bootstrap_ratio(samples(m), samples(b))
        rows.append(f"| {rid} | {desc} | `{measured}` {ms:.4g} {unit} | `{baseline}` {bs:.4g} {unit} | "
                    f"**{ratio:.3g}** | [{lo:.3g}, {hi:.3g}] | {target} | {meets(ratio, target)} |")
    with open(args.out, "a") as f:
        f.write(f"\n## {args.title}\n\n")
        f.write(f"- machine: {machine()}\n- JVM: {jvm}\n- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC\n")
        f.write(f"- command: `{args.command}`\n\n")
        f.write("| id | what | measured | baseline | ratio | 95% CI (bootstrap) | target | result |\n")
        f.write("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
        f.write("\n".join(rows) + "\n")
    print(f"wrote {len(rows)} rows to {args.out}")

if __name__ == "__main__":
    sys.exit(main())
