#!/usr/bin/env python3
"""A/B of one environment switch (or several) on fz's own kernels.

Every scheduling change that can be turned off keeps an environment switch
that restores the launch it replaced (FZ_CLUSTER_PREFETCH=0,
FZ_OUTER_SHARED=0, FZ_GRID_AT_LOAD=off, ...; README's table). This runs
each row through fuse-run both ways, in alternating order round after
round so that drift of the GPU's clocks falls on both sides alike, and
writes a Markdown table: the plan each side ran (its kind and launch
line, from --print-plan), the median kernel time of each side's best
round, its % of the copy bandwidth fuse-run measures in the same process,
and the change.

    python3 bench/ab.py --switch FZ_CLUSTER_PREFETCH=0 \\
        test/gpu/norm_softmax_bf16.fz:M=1024,N=262144 \\
        test/gpu/norm_softmax.fz:M=512,N=262144 --report OUT/ab.md

With --switch repeated, each switch runs alone against the one default
side (which then runs once a round, not once a switch), the side that
goes first turning round by round, and the table has each switch's plan,
time and change. A switch may set several variables at once, separated
by spaces (--switch "FZ_REFETCH_BF16=1 FZ_PERSISTENT_GROUPS=4"): its side
runs with all of them, and the default side with none of any switch's.

A row is FILE:SIZES (fuse-run's --size), or comes from --rows FILE (one
row a line, # comments). Times are fuse-run's (median of --iters CUDA-event
timed runs after warm-up, each behind the timer's L2 flush); outputs are
not validated (the gpu ctests validate the same plans). Without a GPU
fuse-run says SKIPPED and so does this, with exit status 77.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# the report's commit, found as bench.py finds its own
from bench import build_commit, git_commit  # noqa: E402
SKIPPED = 77

TIME = re.compile(r"time: median ([0-9.]+) us over (\d+) runs, ([0-9.]+) MB moved, "
                  r"(\d+) GB/s(?:, copy (\d+) GB/s, ([0-9.]+)% of copy)?")
PLAN = re.compile(r"^plan @\S+ (\S+) kernel=", re.M)
LAUNCH = re.compile(r"^\s+launch (.*)$", re.M)


class Skipped(Exception):
    pass


def parse_row(text):
    """(file, sizes) of FILE:SYM=N,..."""
    path, sep, sizes = text.rpartition(":")
    if not sep or not path or "=" not in sizes:
        raise ValueError("row %r is not FILE:SYM=N,..." % text)
    return path, sizes


def parse_switch(text):
    """[(name, value), ...] of "NAME=VALUE [NAME=VALUE ...]"."""
    pairs = []
    for word in text.split():
        name, sep, value = word.partition("=")
        if not sep or not re.fullmatch(r"[A-Z_][A-Z0-9_]*", name):
            raise ValueError("switch %r is not NAME=VALUE [NAME=VALUE ...]" % text)
        pairs.append((name, value))
    if not pairs or len({n for n, _ in pairs}) != len(pairs):
        raise ValueError("switch %r is not NAME=VALUE [NAME=VALUE ...] "
                         "with each NAME once" % text)
    return pairs


def switch_label(pairs):
    return " ".join("%s=%s" % p for p in pairs)


def parse_run(out):
    """What one fuse-run printed: time, GB/s, % of copy, plan summary."""
    m = TIME.search(out)
    if not m:
        return None
    kinds = PLAN.findall(out)
    launches = [l.strip() for l in LAUNCH.findall(out)]
    return dict(us=float(m.group(1)), iters=int(m.group(2)), mb=float(m.group(3)),
                gbs=float(m.group(4)),
                copy_gbs=float(m.group(5)) if m.group(5) else None,
                pct_copy=float(m.group(6)) if m.group(6) else None,
                plan=" + ".join(kinds) or None,
                launch=" / ".join(launches) or None)


def run_fuse(fuse_run, path, sizes, iters, env):
    """(what parse_run read, or dict(error=...); fuse-run's output) of one
    timed, unvalidated fuse-run with its plan printed; Skipped without a
    GPU."""
    cmd = [fuse_run, path, "--size", sizes, "--iters", str(iters), "--no-validate",
           "--print-plan"]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    if p.returncode == SKIPPED:
        raise Skipped(p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "SKIPPED")
    got = parse_run(p.stdout) if p.returncode == 0 else None
    if got is None:
        tail = p.stdout.strip().splitlines()[-1:] or ["(no output)"]
        return dict(error="exit %d: %s" % (p.returncode, tail[0])), p.stdout
    return got, p.stdout


def run_once(fuse_run, path, sizes, iters, env):
    return run_fuse(fuse_run, path, sizes, iters, env)[0]


def read_rows(texts, rows_file):
    """[(file, sizes), ...] of the rows given and those of rows_file (one a
    line, # comments); ValueError or OSError on a bad row or file."""
    texts = list(texts)
    if rows_file:
        with open(rows_file) as fh:
            texts += [l.split("#", 1)[0].strip() for l in fh]
    return [parse_row(t) for t in texts if t]


def measure(rows, fuse_run, switches, iters, rounds, log=None):
    """Each row `rounds` times each way: the default (none of the
    switches' variables set) and each switch alone. The side that goes
    first turns round by round (with one switch: alternates); per side
    the round with the lowest median is kept. A row's "default" is that
    side's run, its "switched" one run per switch, in order."""
    log = log or sys.stderr
    base_env = dict(os.environ)
    for pairs in switches:
        for name, _ in pairs:
            base_env.pop(name, None)
    envs = [base_env]
    labels = ["default"]
    for pairs in switches:
        env = dict(base_env)
        env.update(pairs)
        envs.append(env)
        labels.append(switch_label(pairs))
    results = []
    for path, sizes in rows:
        runs = [[] for _ in envs]
        for r in range(rounds):
            for k in range(len(envs)):
                side = (r + k) % len(envs)
                got = run_once(fuse_run, path, sizes, iters, envs[side])
                runs[side].append(got)
                print("# %s %s %s: %s" % (labels[side], path, sizes,
                                          got.get("error") or "%.2f us" % got["us"]),
                      file=log)
        best = []
        for got in runs:
            ok = [g for g in got if "error" not in g]
            best.append(min(ok, key=lambda g: g["us"]) if ok else got[-1])
        results.append(dict(fusion=path, sizes=sizes, default=best[0],
                            switched=best[1:]))
    return results


def change(a, b):
    if "error" in a or "error" in b:
        return "—"
    return "%+.1f%%" % (100.0 * (b["us"] - a["us"]) / a["us"])


def side_cells(g):
    if "error" in g:
        return ["—", g["error"]]
    pct = " (%.1f)" % g["pct_copy"] if g.get("pct_copy") is not None else ""
    plan = g.get("plan") or "?"
    if g.get("launch"):
        plan += ": " + g["launch"]
    return [plan, "%.2f%s" % (g["us"], pct)]


def table(data):
    head = ["fusion", "size", "default plan", "default us (% copy)"]
    for s in data["switches"]:
        head += [s + " plan", s + " us (% copy)", s + " against default"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in data["results"]:
        cells = [r["fusion"], r["sizes"]] + side_cells(r["default"])
        for g in r["switched"]:
            cells += side_cells(g) + [change(r["default"], g)]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return lines


def commit_line(data):
    if data.get("commit_from") == "fuse-run":
        return "%s (the build of the fuse-run that ran)" % data["commit"]
    return "%s (read from the tree; say which build ran if it differs)" % (
        data.get("commit") or "unknown")


def report(data):
    lines = ["# A/B of " + ", ".join(data["switches"]), "",
             "- date: %s" % data["date"],
             "- GPU: %s" % (data.get("device") or "unknown"),
             "- fz commit: %s" % commit_line(data),
             "- each side: `fuse-run FILE --size SIZES --iters %d --no-validate "
             "--print-plan`, %d round(s) each way, the side that goes first "
             "turning round by round, the round with the lowest median kept"
             % (data["iters"], data["rounds"]),
             ""]
    return "\n".join(lines + table(data)) + "\n"


def device_name():
    try:
        p = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                            "--format=csv,noheader"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, universal_newlines=True)
        return p.stdout.strip().splitlines()[0] if p.returncode == 0 and p.stdout.strip() else None
    except OSError:
        return None


def stamp(data, fuse_run):
    """The date, the GPU and the commit of the build that ran, into data
    (the tree's commit, said so, where fuse-run names none)."""
    data.update(date=datetime.datetime.now(datetime.timezone.utc)
                .strftime("%Y-%m-%d %H:%M UTC"), device=device_name())
    built = build_commit(fuse_run)
    data.update(commit=built or git_commit(),
                commit_from="fuse-run" if built else "tree")


def emit(text, data, report_path, json_path):
    """The report to stdout and, where asked, to a file; the numbers as
    JSON where asked."""
    print(text, end="")
    if report_path:
        with open(report_path, "w") as fh:
            fh.write(text)
    if json_path:
        with open(json_path, "w") as fh:
            json.dump(data, fh, indent=1)


def main(argv=None):
    ap = argparse.ArgumentParser(description="A/B of one environment switch on fz's "
                                             "kernels, through fuse-run.")
    ap.add_argument("rows", nargs="*", help="FILE:SYM=N,... (fuse-run's --size)")
    ap.add_argument("--rows", dest="rows_file", default="",
                    help="a file of rows, one a line (# comments)")
    ap.add_argument("--switch", required=True, action="append",
                    help="NAME=VALUE (or several, separated by spaces) set in "
                         "the environment of a switched side; the default side "
                         "runs without any switch's NAME; repeat it for more "
                         "sides against the one default (each switch alone)")
    ap.add_argument("--iters", type=int, default=30, help="timed runs per fuse-run")
    ap.add_argument("--rounds", type=int, default=1,
                    help="fuse-runs each way per row, alternating which goes first")
    ap.add_argument("--fuse-run", default=os.path.join(HERE, "..", "build-gpu", "bin",
                                                       "fuse-run"))
    ap.add_argument("--report", default="", help="write the Markdown table here")
    ap.add_argument("--json", default="", help="write the numbers here")
    args = ap.parse_args(argv)
    try:
        switches = [parse_switch(s) for s in args.switch]
        rows = read_rows(args.rows, args.rows_file)
    except (ValueError, OSError) as e:
        print("ab.py: %s" % e, file=sys.stderr)
        return 2
    if not rows or args.iters < 1 or args.rounds < 1:
        print("ab.py: no rows, or --iters/--rounds below 1", file=sys.stderr)
        return 2
    try:
        results = measure(rows, args.fuse_run, switches, args.iters, args.rounds)
    except Skipped as e:
        print("ab.py: SKIPPED, no GPU (%s)" % e)
        return SKIPPED
    data = dict(switches=[switch_label(s) for s in switches], iters=args.iters,
                rounds=args.rounds, results=results)
    stamp(data, args.fuse_run)
    emit(report(data), data, args.report, args.json)
    return 1 if any("error" in g for r in results
                    for g in [r["default"]] + r["switched"]) else 0


if __name__ == "__main__":
    sys.exit(main())
