#!/usr/bin/env python3
"""Where an inner-outer kernel's time goes: its phase trace, as a report.

With FZ_TRACE=phases, an inner-outer kernel (layer-norm and RMS-norm
backward) records when each block reaches each phase (the first row, all
rows, its column partials written, past the grid barrier, its share of
the final pass done), and fuse-run prints the last timed run's summary
(docs/design.md, Testing). This runs each row through fuse-run that way,
once with the default and once with each --switch (NAME=VALUE, several
separated by spaces, as bench/ab.py takes them), and writes a Markdown
report: a table a row, one line a side, the kernel's time and the median
block's time at each mark (us from the first block's start), then each
side's whole summary (min, median and max over the blocks, the median
span from each block's previous mark, in us and SM cycles).

    python3 bench/phases.py --switch FZ_COLUMN_PARTS=4 \\
        test/gpu/norm_layer_norm_backward_bf16.fz:M=2048,N=8192 \\
        --report OUT/trace.md

One run a side: a trace is one launch's, the last of --iters timed runs,
and says when, not how fast on average (bench/ab.py times). Without a GPU
fuse-run says SKIPPED and so does this, with exit status 77; a plan that
is not traced (not an inner-outer one) is an error of its row.
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ab import (SKIPPED, Skipped, commit_line, emit, parse_switch,  # noqa: E402
                read_rows, run_fuse, stamp, switch_label)

HEADER = re.compile(r"^trace (\S+): (\d+) of (\d+) blocks; .*step (\d+) ns",
                    re.M)
MARK = re.compile(r"^  ([a-z-]+)\s+(\d+)(?:\s+([0-9.]+)\s+([0-9.]+)\s+"
                  r"([0-9.]+)\s+(\S+)\s+(\S+))?\s*$")


def parse_traces(out):
    """The trace summaries fuse-run printed: a list of dicts (kernel,
    blocks, grid, step_ns, marks: [dict(name, blocks, min, median, max,
    span_us, span_cycles)], None where a column is "-" or absent)."""
    traces = []
    lines = out.splitlines()
    for i, line in enumerate(lines):
        h = HEADER.match(line)
        if not h:
            continue
        t = dict(kernel=h.group(1), blocks=int(h.group(2)), grid=int(h.group(3)),
                 step_ns=int(h.group(4)), marks=[])
        for mark_line in lines[i + 2:]:  # past the column heads
            m = MARK.match(mark_line)
            if not m:
                break
            num = lambda g: None if g is None or g == "-" else float(g)
            t["marks"].append(dict(
                name=m.group(1), blocks=int(m.group(2)), min=num(m.group(3)),
                median=num(m.group(4)), max=num(m.group(5)),
                span_us=num(m.group(6)),
                span_cycles=None if num(m.group(7)) is None else int(m.group(7))))
        traces.append(t)
    return traces


def run_traced(fuse_run, path, sizes, iters, env):
    got, out = run_fuse(fuse_run, path, sizes, iters, env)
    if "error" in got:
        return got
    got["traces"] = parse_traces(out)
    if not got["traces"]:
        return dict(error="no kernel was traced (%s)" % (got.get("plan") or "no plan"))
    return got


def measure(rows, fuse_run, switches, iters, log=None):
    """Each row once a side: the default (none of the switches' variables)
    and each switch; FZ_TRACE=phases on every side."""
    log = log or sys.stderr
    base_env = dict(os.environ)
    for pairs in switches:
        for name, _ in pairs:
            base_env.pop(name, None)
    base_env["FZ_TRACE"] = "phases"
    sides = [("default", base_env)]
    for pairs in switches:
        env = dict(base_env)
        env.update(pairs)
        sides.append((switch_label(pairs), env))
    results = []
    for path, sizes in rows:
        runs = []
        for label, env in sides:
            got = run_traced(fuse_run, path, sizes, iters, env)
            got["side"] = label
            runs.append(got)
            print("# %s %s %s: %s" % (label, path, sizes,
                                      got.get("error") or "%.2f us" % got["us"]),
                  file=log)
        results.append(dict(fusion=path, sizes=sizes, sides=runs))
    return results


def cell(v):
    return "—" if v is None else "%.2f" % v


def row_section(r):
    """The row's table (a line a side and kernel: the median block at each
    mark) and each side's summary."""
    names = []
    for g in r["sides"]:
        for t in g.get("traces", []):
            for m in t["marks"]:
                if m["name"] not in names:
                    names.append(m["name"])
    head = ["side", "kernel", "us (% copy)"] + names
    lines = ["## %s, %s" % (r["fusion"], r["sizes"]), "",
             "Median block, us from the first block's start:", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for g in r["sides"]:
        if "error" in g:
            lines.append("| %s | — | %s |" % (g["side"], g["error"].replace("|", "\\|"))
                         + " |" * len(names))
            continue
        pct = " (%.1f)" % g["pct_copy"] if g.get("pct_copy") is not None else ""
        for t in g["traces"]:
            at = {m["name"]: m["median"] for m in t["marks"]}
            lines.append("| " + " | ".join(
                [g["side"], t["kernel"], "%.2f%s" % (g["us"], pct)] +
                [cell(at.get(n)) for n in names]) + " |")
    for g in r["sides"]:
        for t in g.get("traces", []):
            lines += ["", "%s: %s, %d of %d blocks, timer step %d ns; plan %s" % (
                g["side"], t["kernel"], t["blocks"], t["grid"], t["step_ns"],
                (g.get("plan") or "?") + (": " + g["launch"] if g.get("launch") else "")),
                "",
                "| mark | blocks | min | median | max | span us | span cycles |",
                "|---|---|---|---|---|---|---|"]
            for m in t["marks"]:
                lines.append("| %s | %d | %s | %s | %s | %s | %s |" % (
                    m["name"], m["blocks"], cell(m["min"]), cell(m["median"]),
                    cell(m["max"]), cell(m["span_us"]),
                    "—" if m["span_cycles"] is None else m["span_cycles"]))
    return lines + [""]


def report(data):
    lines = ["# Phase traces" + (" with " + ", ".join(data["switches"])
                                 if data["switches"] else ""), "",
             "- date: %s" % data["date"],
             "- GPU: %s" % (data.get("device") or "unknown"),
             "- fz commit: %s" % commit_line(data),
             "- each side: `FZ_TRACE=phases fuse-run FILE --size SIZES --iters %d "
             "--no-validate --print-plan`, once; the trace is the last timed "
             "run's, the time the median of all" % data["iters"],
             ""]
    for r in data["results"]:
        lines += row_section(r)
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Phase traces of fz's inner-outer "
                                             "kernels, through fuse-run.")
    ap.add_argument("rows", nargs="*", help="FILE:SYM=N,... (fuse-run's --size)")
    ap.add_argument("--rows", dest="rows_file", default="",
                    help="a file of rows, one a line (# comments)")
    ap.add_argument("--switch", action="append", default=[],
                    help="NAME=VALUE (or several, separated by spaces): a side "
                         "traced with them set, besides the default")
    ap.add_argument("--iters", type=int, default=10, help="timed runs per fuse-run")
    ap.add_argument("--fuse-run", default=os.path.join(HERE, "..", "build-gpu", "bin",
                                                       "fuse-run"))
    ap.add_argument("--report", default="", help="write the Markdown report here")
    ap.add_argument("--json", default="", help="write the numbers here")
    args = ap.parse_args(argv)
    try:
        switches = [parse_switch(s) for s in args.switch]
        rows = read_rows(args.rows, args.rows_file)
    except (ValueError, OSError) as e:
        print("phases.py: %s" % e, file=sys.stderr)
        return 2
    if not rows or args.iters < 1:
        print("phases.py: no rows, or --iters below 1", file=sys.stderr)
        return 2
    try:
        results = measure(rows, args.fuse_run, switches, args.iters)
    except Skipped as e:
        print("phases.py: SKIPPED, no GPU (%s)" % e)
        return SKIPPED
    data = dict(switches=[switch_label(s) for s in switches], iters=args.iters,
                results=results)
    stamp(data, args.fuse_run)
    emit(report(data), data, args.report, args.json)
    return 1 if any("error" in g for r in results for g in r["sides"]) else 0


if __name__ == "__main__":
    sys.exit(main())
