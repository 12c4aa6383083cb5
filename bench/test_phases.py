#!/usr/bin/env python3
"""bench/phases.py without a GPU: a fake fuse-run prints what the real one
prints with FZ_TRACE=phases (a plan, the trace summary as
lib/runtime/trace.c writes it, a time line), its numbers depending on the
switch, and logs each call with the variables it saw; the tests check
the parsing, the sides and their environments, the report, an untraced
plan, a failed run and the skip."""
import contextlib
import io
import os
import stat
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import phases  # noqa: E402
from test_ab import check, run_tests  # noqa: E402

FAKE = r'''#!/usr/bin/env python3
import os, sys
if sys.argv[1:] == ["--version"]:
    print("fuse-run (fz) 0.1.0, commit 1a2b3c4")
    sys.exit(0)
mode = os.environ.get("FAKE_MODE", "")
parts = os.environ.get("FZ_COLUMN_PARTS", "-")
with open(os.environ["FAKE_LOG"], "a") as fh:
    fh.write("%s %s %s %s\n" % (os.environ.get("FZ_TRACE", "-"), parts,
                                sys.argv[1], sys.argv[3]))
if mode == "skip":
    print("fuse-run: x.fz: SKIPPED, no GPU (cannot load the CUDA driver)")
    sys.exit(77)
if mode == "fail" and parts == "4":
    print("fuse-run: x.fz: CUDA_ERROR_ILLEGAL_ADDRESS")
    sys.exit(1)
print("plan @lnb inner-outer-persistent kernel=fz_inner_outer_persistent")
print("  launch grid=264 block=512x1 vector=8 persistent=2 phases=2 cooperative")
if mode != "untraced":
    end = 43.30 if parts == "4" else 49.54
    print("trace fz_inner_outer_persistent: 132 of 132 blocks; us from the "
          "first block's start (global timer, step 32 ns seen); span: since "
          "the block's previous mark")
    print("  mark          blocks       min    median       max     span us   span cycles")
    print("  start            132      0.00      0.06      0.13           -             -")
    print("  first-row        132      3.30      3.68      5.54        3.62          7160")
    print("  rows             132     31.65     34.67     37.38       30.75         60780")
    print("  published        132     33.54     38.56     41.18        3.73          7386")
    print("  grid-barrier     132     42.78     43.20     43.30        4.70          9283")
    print("  end              132     43.10     %.2f     %.2f        0.06            89"
          % (end - 0.1, end))
us = 50.10 if parts == "4" else 53.92
print("time: median %.2f us over 10 runs, 100.729 MB moved, 1868 GB/s, "
      "copy 2608 GB/s, 71.6%% of copy" % us)
print("fuse-run: TIMED (not validated)")
'''


def fake(tmp):
    path = os.path.join(tmp, "fuse-run")
    with open(path, "w") as fh:
        fh.write(FAKE)
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return path


def run(tmp, args, mode=""):
    log = os.path.join(tmp, "calls.log")
    if os.path.exists(log):
        os.remove(log)
    os.environ["FAKE_LOG"] = log
    os.environ["FAKE_MODE"] = mode
    os.environ["FZ_COLUMN_PARTS"] = "2"  # the default side must drop it
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = phases.main(["--fuse-run", fake(tmp)] + args)
    del os.environ["FZ_COLUMN_PARTS"]
    calls = open(log).read().split("\n")[:-1] if os.path.exists(log) else []
    return rc, out.getvalue(), err.getvalue(), calls


ROW = "x.fz:M=2048,N=8192"


def test_sides_and_report(tmp):
    json_path = os.path.join(tmp, "t.json")
    rc, out, err, calls = run(tmp, ["--switch", "FZ_COLUMN_PARTS=4", ROW,
                                    "--json", json_path])
    check(rc == 0, "rc %d: %s %s" % (rc, out, err))
    # traced on both sides; the default without the switch's variable
    check(calls == ["phases - x.fz M=2048,N=8192", "phases 4 x.fz M=2048,N=8192"],
          calls)
    check("# Phase traces with FZ_COLUMN_PARTS=4" in out, out)
    check("1a2b3c4 (the build of the fuse-run that ran)" in out, out)
    head = ("| side | kernel | us (% copy) | start | first-row | rows | published "
            "| grid-barrier | end |")
    check(head in out, out)
    check("| default | fz_inner_outer_persistent | 53.92 (71.6) | 0.06 | 3.68 | "
          "34.67 | 38.56 | 43.20 | 49.44 |" in out, out)
    check("| FZ_COLUMN_PARTS=4 | fz_inner_outer_persistent | 50.10 (71.6) | 0.06 |"
          in out, out)
    # each side's whole summary, with the plan
    check(out.count("| mark | blocks | min | median | max | span us | span cycles |")
          == 2, out)
    check("| start | 132 | 0.00 | 0.06 | 0.13 | — | — |" in out, out)
    check("| end | 132 | 43.10 | 43.20 | 43.30 | 0.06 | 89 |" in out, out)
    check("132 of 132 blocks, timer step 32 ns; plan inner-outer-persistent: "
          "grid=264" in out, out)
    import json
    data = json.load(open(json_path))
    marks = data["results"][0]["sides"][0]["traces"][0]["marks"]
    check([m["name"] for m in marks] == ["start", "first-row", "rows", "published",
                                         "grid-barrier", "end"], marks)
    check(marks[0]["span_us"] is None and marks[2]["span_cycles"] == 60780, marks)


def test_default_alone(tmp):
    # no switch names FZ_COLUMN_PARTS: the caller's value stays
    rc, out, err, calls = run(tmp, [ROW])
    check(rc == 0 and calls == ["phases 2 x.fz M=2048,N=8192"], (rc, calls))
    check(out.startswith("# Phase traces\n"), out)


def test_untraced_plan(tmp):
    rc, out, err, calls = run(tmp, [ROW], mode="untraced")
    check(rc == 1, "rc %d" % rc)
    check("no kernel was traced (inner-outer-persistent)" in out, out)


def test_failed_side(tmp):
    rc, out, err, calls = run(tmp, ["--switch", "FZ_COLUMN_PARTS=4", ROW],
                              mode="fail")
    check(rc == 1 and "exit 1: fuse-run: x.fz: CUDA_ERROR_ILLEGAL_ADDRESS" in out,
          (rc, out))
    check("| default | fz_inner_outer_persistent | 53.92 (71.6) |" in out, out)


def test_skipped_without_gpu(tmp):
    rc, out, err, calls = run(tmp, [ROW], mode="skip")
    check(rc == 77 and "SKIPPED, no GPU" in out, (rc, out))


def test_bad_arguments(tmp):
    for args in ([], ["x.fz"], ["--switch", "lower=1", ROW], ["--iters", "0", ROW]):
        rc, out, err, calls = run(tmp, args)
        check(rc == 2 and not calls, "%r: rc %d, %s" % (args, rc, err))


def main():
    return run_tests([test_sides_and_report, test_default_alone,
                      test_untraced_plan, test_failed_side,
                      test_skipped_without_gpu, test_bad_arguments],
                     "bench phases")


if __name__ == "__main__":
    sys.exit(main())
