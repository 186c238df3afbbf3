#!/usr/bin/env python3
"""Markdown tables of a benchmark run, for summary.md (benchmarks/run_gpu.sh).

Usage: summarize_bench.py BENCH_JSON [CHUNKS_CSV]

BENCH_JSON is {"binaries": {name: Google Benchmark JSON output}}; an entry
may be {"error": ...} instead. Prints one row per benchmark (median when
there are repetitions, else the median of the iterations; errors as such)
and, when CHUNKS_CSV exists, the "size your LOR chunks" table.
"""
import csv
import json
import math
import os
import statistics
import sys


def sci(v):
    """2.31e9 style."""
    if not isinstance(v, (int, float)) or not math.isfinite(v):
        return ""
    if v == 0:
        return "0"
    e = math.floor(math.log10(abs(v)))
    m = v / 10**e
    if abs(round(m, 2)) >= 10:
        m, e = m / 10, e + 1
    return f"{m:.2f}e{e}"


def fmt_time(value, unit):
    if not isinstance(value, (int, float)):
        return ""
    s = value * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}.get(unit, 1.0)
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.2f} us"


def chunk_label(c):
    try:
        n = int(float(c))
    except ValueError:
        return c
    k = len(str(n)) - 1
    return f"1e{k}" if n == 10**k else str(n)


def benchmark_rows(binary, data):
    if "error" in data:
        yield f"| {binary} | ERROR: {data['error']} | | |"
        return
    benches = data.get("benchmarks", [])
    medians = {b["run_name"]: b for b in benches
               if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"}
    errors, iterations, order = {}, {}, []
    for b in benches:
        name = b.get("run_name", b.get("name"))
        if name not in order:
            order.append(name)
        if b.get("error_occurred") or b.get("skipped") not in (None, False, 0, ""):
            errors.setdefault(name, b.get("error_message", b.get("skip_message", "error")))
        elif b.get("run_type", "iteration") == "iteration":
            iterations.setdefault(name, []).append(b)

    def median_of(runs, key):
        values = [r[key] for r in runs if key in r]
        return statistics.median(values) if values else None

    for name in order:
        shown = name.replace("/manual_time", "")
        if name in medians:
            b = medians[name]
            t, ips, upc = b.get("real_time"), b.get("items_per_second"), b.get("us_per_call")
            unit = b.get("time_unit", "ns")
        elif name in iterations:
            runs = iterations[name]
            t, ips, upc = (median_of(runs, k) for k in ("real_time", "items_per_second", "us_per_call"))
            unit = runs[0].get("time_unit", "ns")
        elif name in errors:
            yield f"| {shown} | ERROR: {str(errors[name]).replace('|', '/')[:160]} | | |"
            continue
        else:
            continue
        upc_s = f"{upc:.2f}" if isinstance(upc, (int, float)) else ""
        yield f"| {shown} | {fmt_time(t, unit)} | {sci(ips)} | {upc_s} |"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        binaries = json.load(f).get("binaries", {})
    lines = ["## Benchmarks (medians)", ""]
    if binaries:
        lines += ["| name | real time | LORs/s | us/call |", "|---|---:|---:|---:|"]
        for binary, data in binaries.items():
            lines += benchmark_rows(binary, data)
    else:
        lines += ["(no benchmark results)"]

    chunks = sys.argv[2] if len(sys.argv) > 2 else ""
    if chunks and os.path.exists(chunks):
        with open(chunks) as f:
            rows = list(csv.DictReader(f))
        if rows:
            lines += ["", "## Size your LOR chunks (dmi-subset forward; % of the one-call figure)",
                      "", "| variant | chunk | us/call | LORs/s | % of peak | >= 90% | note |",
                      "|---|---:|---:|---:|---:|---|---|"]
            first = {}
            for r in rows:
                try:
                    rate = sci(float(r["lors_per_second"]))
                except ValueError:
                    rate = r["lors_per_second"]
                lines.append(f"| {r['variant']} | {chunk_label(r['chunk'])} | {r['us_per_call']} | "
                             f"{rate} | {r['percent_of_peak']} | {r['reaches_90']} | {r['note']} |")
                if r["reaches_90"] == "yes":
                    first.setdefault(r["variant"], chunk_label(r["chunk"]))
            variants = list(dict.fromkeys(r["variant"] for r in rows))
            lines += ["", "First chunk size reaching 90%: "
                      + "; ".join(f"{v}: {first.get(v, 'none')}" for v in variants)]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
