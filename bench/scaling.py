#!/usr/bin/env python3
"""How one of fz's kernels grows with its size: fixed cost and streaming rate.

A kernel's time at size s is roughly fixed + bytes(s) / rate: the fixed
part is what every launch pays whatever its size (the first loads with
nothing to overlap them, grid barriers, a final column pass, the tail of
the last wave), the rate is how fast it streams once those are paid. A
kernel far from the copy bandwidth at medium sizes can be short of either,
and the remedies differ. This runs one fusion through fuse-run at a series
of sizes, one symbol varied and the others fixed, and fits time against
bytes moved by least squares:

    python3 bench/scaling.py test/gpu/norm_layer_norm_backward_bf16.fz \\
        --size N=8192 --vary M=264,528,1056,2112,4224,8448 \\
        --rounds 2 --report OUT/scaling.md

Each size runs --rounds times (the sizes ascending, then descending, so
that drift of the clocks falls on small and large alike); the round with
the lowest median is kept. The table gives each size's plan, time, bytes,
% of copy and the fit's residual; below it, the fixed cost, the streaming
rate against the copy fuse-run measures, and the share of the time the
fixed cost takes at each size. A size whose plan differs from the largest
size's is marked: a fit across plans mixes two kernels' costs, so choose
sizes that share one (the marked rows are left out of the fit when at
least two rows remain). Times are fuse-run's (median of --iters CUDA-event
timed runs after warm-up, each behind the timer's L2 flush); outputs are
not validated (the gpu ctests validate the same plans). Without a GPU
fuse-run says SKIPPED and so does this, with exit status 77.
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ab import SKIPPED, Skipped, commit_line, emit, run_once, stamp  # noqa: E402


def parse_sizes(text):
    """[(SYM, N), ...] of SYM=N,... (may be empty)."""
    out = []
    for part in filter(None, text.split(",")):
        name, sep, value = part.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or \
                not re.fullmatch(r"[0-9]+", value):
            raise ValueError("%r is not SYM=N" % part)
        out.append((name, int(value)))
    return out


def parse_vary(text):
    """(SYM, [N, ...]) of SYM=N1,N2,...: at least two distinct sizes."""
    name, sep, values = text.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError("--vary %r is not SYM=N1,N2,..." % text)
    try:
        sizes = [int(v) for v in values.split(",") if v.strip()]
    except ValueError:
        raise ValueError("--vary %r is not SYM=N1,N2,..." % text)
    if len(set(sizes)) < 2 or min(sizes) < 1:
        raise ValueError("--vary %r needs at least two distinct sizes of 1 or more" % text)
    return name, sorted(set(sizes))


def size_text(fixed, name, value):
    return ",".join(["%s=%d" % (n, v) for n, v in fixed if n != name] +
                    ["%s=%d" % (name, value)])


def measure(path, fixed, vary, fuse_run, iters, rounds, log=None):
    """{size: best run} over `rounds` passes, ascending then descending."""
    log = log or sys.stderr
    name, values = vary
    runs = {v: [] for v in values}
    for r in range(rounds):
        for v in (values if r % 2 == 0 else values[::-1]):
            got = run_once(fuse_run, path, size_text(fixed, name, v), iters, os.environ)
            runs[v].append(got)
            print("# %s %s=%d: %s" % (path, name, v,
                                      got.get("error") or "%.2f us" % got["us"]),
                  file=log)
    best = {}
    for v, got in runs.items():
        ok = [g for g in got if "error" not in g]
        best[v] = min(ok, key=lambda g: g["us"]) if ok else got[-1]
    return best


def fit(points):
    """Least squares us = fixed + per_mb * mb over (mb, us) points:
    (fixed, per_mb), or None when the bytes do not vary."""
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    if n < 2 or sxx <= 0.0:
        return None
    per_mb = sum((p[0] - mx) * (p[1] - my) for p in points) / sxx
    return my - per_mb * mx, per_mb


def analyse(best, values):
    """The fit and what it says, from the best run of each size."""
    ok = [v for v in values if "error" not in best[v]]
    if not ok:
        return dict(fit=None, why="every size failed", marked=[], used=[])
    plan = lambda v: (best[v].get("plan"), best[v].get("launch"))
    marked = [v for v in ok if plan(v) != plan(ok[-1])]
    same = [v for v in ok if v not in marked]
    used = same if len(same) >= 2 else ok
    line = fit([(best[v]["mb"], best[v]["us"]) for v in used])
    if line is None:
        return dict(fit=None, why="the bytes moved do not change with the size",
                    marked=marked, used=used)
    fixed, per_mb = line
    copies = [best[v]["copy_gbs"] for v in used if best[v].get("copy_gbs")]
    copy = sorted(copies)[len(copies) // 2] if copies else None
    rate = 1000.0 / per_mb if per_mb > 0 else None  # MB/us -> GB/s
    return dict(fit=dict(fixed_us=fixed, per_mb_us=per_mb, rate_gbs=rate,
                         copy_gbs=copy,
                         rate_pct_copy=100.0 * rate / copy if rate and copy else None),
                used=used, marked=marked)


def table(data):
    name = data["vary"][0]
    f = data["analysis"].get("fit")
    used = set(data["analysis"]["used"])
    marked = set(data["analysis"]["marked"])
    lines = ["| %s | plan | us | MB | GB/s | %% copy | fit us | residual | fixed share |" % name,
             "|---|---|---|---|---|---|---|---|---|"]
    for v in data["vary"][1]:
        g = data["results"][str(v)]
        if "error" in g:
            cells = [str(v), g["error"], "—", "—", "—", "—", "—", "—", "—"]
        else:
            plan = (g.get("plan") or "?") + (": " + g["launch"] if g.get("launch") else "")
            if v in marked:
                plan = "* " + plan
            pct = "%.1f" % g["pct_copy"] if g.get("pct_copy") is not None else "—"
            fit_cells = ["—", "—", "—"]
            if f:
                model = f["fixed_us"] + f["per_mb_us"] * g["mb"]
                residual = round(100.0 * (g["us"] - model) / model, 1) + 0.0
                fit_cells = ["%.2f" % model,
                             "%+.1f%%%s" % (residual, "" if v in used else " (not fitted)"),
                             "%.0f%%" % (100.0 * f["fixed_us"] / g["us"])]
            cells = [str(v), plan, "%.2f" % g["us"], "%.1f" % g["mb"],
                     "%.0f" % g["gbs"], pct] + fit_cells
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return lines


def summary(data):
    a = data["analysis"]
    f = a.get("fit")
    notes = []
    if a["marked"] and not set(a["marked"]) & set(a["used"]):
        notes.append("- rows marked * ran another plan than the largest size "
                     "and are left out of the fit")
    elif a["marked"]:
        notes.append("- rows marked * ran another plan than the largest size, and "
                     "the fit includes them: fewer than two rows share its plan")
    if not f:
        return ["No fit: %s." % a["why"]] + notes
    out = ["- fixed cost: %.2f us a launch" % f["fixed_us"]]
    if f["rate_gbs"]:
        rate = "- streaming rate: %.0f GB/s" % f["rate_gbs"]
        if f["rate_pct_copy"] is not None:
            rate += " (%.1f%% of the copy's %.0f GB/s)" % (f["rate_pct_copy"], f["copy_gbs"])
        out.append(rate)
    else:
        out.append("- streaming rate: none (the time does not grow with the bytes)")
    return out + notes


def report(data):
    name, values = data["vary"]
    fixed = ",".join("%s=%d" % nv for nv in data["fixed"]) or "none"
    lines = ["# Scaling of %s" % data["fusion"], "",
             "- date: %s" % data["date"],
             "- GPU: %s" % (data.get("device") or "unknown"),
             "- fz commit: %s" % commit_line(data),
             "- sizes: %s varied over %s; fixed: %s" % (
                 name, ", ".join(str(v) for v in values), fixed),
             "- each size: `fuse-run FILE --size SIZES --iters %d --no-validate "
             "--print-plan`, %d round(s), the round with the lowest median kept"
             % (data["iters"], data["rounds"]),
             "- fit: least squares of time against MB moved (us = fixed + MB / rate)",
             ""]
    return "\n".join(lines + table(data) + [""] + summary(data)) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description="Fixed cost and streaming rate of one "
                                             "fusion's kernels, through fuse-run.")
    ap.add_argument("fusion", help="the .fz file")
    ap.add_argument("--size", default="", help="the symbols held fixed, SYM=N,...")
    ap.add_argument("--vary", required=True, help="the symbol varied, SYM=N1,N2,...")
    ap.add_argument("--iters", type=int, default=30, help="timed runs per fuse-run")
    ap.add_argument("--rounds", type=int, default=1, help="passes over the sizes")
    ap.add_argument("--fuse-run", default=os.path.join(HERE, "..", "build-gpu", "bin",
                                                       "fuse-run"))
    ap.add_argument("--report", default="", help="write the Markdown report here")
    ap.add_argument("--json", default="", help="write the numbers here")
    args = ap.parse_args(argv)
    try:
        fixed = parse_sizes(args.size)
        vary = parse_vary(args.vary)
    except ValueError as e:
        print("scaling.py: %s" % e, file=sys.stderr)
        return 2
    if args.iters < 1 or args.rounds < 1:
        print("scaling.py: --iters and --rounds must be at least 1", file=sys.stderr)
        return 2
    try:
        best = measure(args.fusion, fixed, vary, args.fuse_run, args.iters, args.rounds)
    except Skipped as e:
        print("scaling.py: SKIPPED, no GPU (%s)" % e)
        return SKIPPED
    data = dict(fusion=args.fusion, fixed=fixed, vary=[vary[0], vary[1]],
                iters=args.iters, rounds=args.rounds,
                results={str(v): g for v, g in best.items()})
    data["analysis"] = analyse(best, vary[1])
    stamp(data, args.fuse_run)
    emit(report(data), data, args.report, args.json)
    return 1 if any("error" in g for g in best.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
