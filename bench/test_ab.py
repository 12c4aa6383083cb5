#!/usr/bin/env python3
"""bench/ab.py without a GPU: a fake fuse-run prints what the real one
prints (a plan, a time line), its time depending on the switch and on
how many times it ran, and logs each call; the tests check the parsing,
the alternating order, the best round, the table, the errors and the
skip."""
import contextlib
import io
import os
import stat
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ab  # noqa: E402

FAKE = r'''#!/usr/bin/env python3
import os, sys
if sys.argv[1:] == ["--version"]:
    old = os.environ.get("FAKE_MODE") == "old-version"
    print("fuse-run (fz) 0.1.0" + ("" if old else ", commit 1a2b3c4-dirty"))
    print("LLVM version 19.1.7")
    sys.exit(0)
log = os.environ["FAKE_LOG"]
with open(log, "a") as fh:
    n = sum(1 for _ in open(log)) if os.path.exists(log) else 0
switched = os.environ.get("FZ_TEST_SWITCH") == "0"
other = os.environ.get("FZ_TEST_OTHER") == "1"
mode = os.environ.get("FAKE_MODE", "")
if switched and other and mode != "both":
    print("fuse-run: both switches set at once")
    sys.exit(1)
side = ("both" if switched and other else "switched" if switched
        else "other" if other else "default")
with open(log, "a") as fh:
    fh.write("%s %s %s\n" % (side, sys.argv[1], sys.argv[3]))
if mode == "skip":
    print("fuse-run: x.fz: SKIPPED, no GPU (cannot load the CUDA driver)")
    sys.exit(77)
if mode == "fail" and side == "switched":
    print("fuse-run: launch failed: CUDA_ERROR_LAUNCH_FAILED")
    sys.exit(1)
us = {"default": 100.0, "switched": 80.0, "other": 90.0, "both": 70.0}[side] + (5.0 if n in (2, 3) else 0.0)
print("plan @f inner-persistent kernel=fz_inner_persistent")
print("  space [I8, R8] reference %x index32")
print("  launch grid=8 block=512x1%s" % (" prefetch" if side == "default" else ""))
print("validation: SKIPPED (--no-validate): times only")
print("time: median %.2f us over 30 runs, 1073.742 MB moved, 2166 GB/s, copy 2987 GB/s, %.1f%% of copy"
      % (us, 7250.0 / us))
print("fuse-run: TIMED (not validated)")
'''


def fake(tmp, script=FAKE):
    """An executable fuse-run in tmp that runs `script`."""
    path = os.path.join(tmp, "fuse-run")
    with open(path, "w") as fh:
        fh.write(script)
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return path


def run(tmp, args, mode="", switches=("FZ_TEST_SWITCH=0",)):
    log = os.path.join(tmp, "calls.log")
    if os.path.exists(log):
        os.remove(log)
    os.environ["FAKE_LOG"] = log
    os.environ["FAKE_MODE"] = mode
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = ab.main(["--fuse-run", fake(tmp)] +
                     [a for s in switches for a in ("--switch", s)] + args)
    calls = open(log).read().split("\n")[:-1] if os.path.exists(log) else []
    return rc, out.getvalue(), err.getvalue(), calls


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def test_table_order_and_best_round(tmp):
    report = os.path.join(tmp, "ab.md")
    rc, out, _, calls = run(tmp, ["a.fz:M=8,N=8", "b.fz:M=4", "--rounds", "2",
                                  "--report", report])
    check(rc == 0, "exit status %d" % rc)
    # round 0: default first, round 1: switched first, row by row
    check([c.split()[0] for c in calls] ==
          ["default", "switched", "switched", "default"] * 2, "order %s" % calls)
    check(calls[0].split()[1:] == ["a.fz", "M=8,N=8"], "row a %s" % calls[0])
    text = open(report).read()
    check(text == out, "report file differs from stdout")
    check("# A/B of FZ_TEST_SWITCH=0" in text, "title")
    lines = [l for l in text.splitlines() if l.startswith("| a.fz")]
    check(len(lines) == 1, "row a: %s" % text)
    # the second round of row a ran 5 us slower: the best round is kept
    cells = [c.strip() for c in lines[0].strip("|").split("|")]
    check(cells[2] == "inner-persistent: grid=8 block=512x1 prefetch", cells[2])
    check(cells[3] == "100.00 (72.5)", cells[3])
    check(cells[4] == "inner-persistent: grid=8 block=512x1", cells[4])
    check(cells[5] == "80.00 (90.6)", cells[5])
    check(cells[6] == "-20.0%", cells[6])


def test_commit_of_the_build(tmp):
    rc, out, _, _ = run(tmp, ["a.fz:M=8"])
    check(rc == 0, "exit status %d" % rc)
    check("- fz commit: 1a2b3c4-dirty (the build of the fuse-run that ran)"
          in out, out)
    # a fuse-run that does not name its commit: the tree's, said so
    rc, out, _, _ = run(tmp, ["a.fz:M=8"], mode="old-version")
    check(rc == 0, "exit status %d" % rc)
    check("(read from the tree; say which build ran if it differs)" in out, out)


def test_failed_side(tmp):
    rc, out, _, _ = run(tmp, ["a.fz:M=8"], mode="fail")
    check(rc == 1, "exit status %d" % rc)
    row = [l for l in out.splitlines() if l.startswith("| a.fz")][0]
    check("exit 1: fuse-run: launch failed: CUDA_ERROR_LAUNCH_FAILED" in row, row)
    check(row.rstrip().endswith("| — |"), row)


def test_skipped_without_gpu(tmp):
    rc, out, _, calls = run(tmp, ["a.fz:M=8", "b.fz:M=8"], mode="skip")
    check(rc == ab.SKIPPED, "exit status %d" % rc)
    check("SKIPPED" in out and "|" not in out, out)
    check(len(calls) == 1, "ran on after the skip: %s" % calls)


def test_bad_arguments(tmp):
    for args in (["a.fz"], ["a.fz:8"], []):
        rc, _, err, calls = run(tmp, args)
        check(rc == 2 and "ab.py:" in err and not calls, "%s: %d %s" % (args, rc, err))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = ab.main(["--switch", "not a switch", "a.fz:M=8"])
    check(rc == 2 and "NAME=VALUE" in err.getvalue(), err.getvalue())


def test_rows_file(tmp):
    rows = os.path.join(tmp, "rows.txt")
    with open(rows, "w") as fh:
        fh.write("# softmax\na.fz:M=8  # the first\n\nb.fz:M=16\n")
    rc, out, _, calls = run(tmp, ["--rows", rows])
    check(rc == 0, "exit status %d" % rc)
    check([c.split()[1] for c in calls] == ["a.fz", "a.fz", "b.fz", "b.fz"], calls)


def test_two_switches_one_default(tmp):
    # each switch alone against the one default; the first side turns
    rc, out, _, calls = run(tmp, ["a.fz:M=8", "--rounds", "3"],
                            switches=("FZ_TEST_SWITCH=0", "FZ_TEST_OTHER=1"))
    check(rc == 0, "exit status %d: %s" % (rc, out))
    check([c.split()[0] for c in calls] ==
          ["default", "switched", "other", "switched", "other", "default",
           "other", "default", "switched"], "order %s" % calls)
    check("# A/B of FZ_TEST_SWITCH=0, FZ_TEST_OTHER=1" in out, out)
    head = [l for l in out.splitlines() if l.startswith("| fusion")][0]
    check(head == "| fusion | size | default plan | default us (% copy) | "
          "FZ_TEST_SWITCH=0 plan | FZ_TEST_SWITCH=0 us (% copy) | "
          "FZ_TEST_SWITCH=0 against default | FZ_TEST_OTHER=1 plan | "
          "FZ_TEST_OTHER=1 us (% copy) | FZ_TEST_OTHER=1 against default |", head)
    cells = [c.strip() for c in
             [l for l in out.splitlines() if l.startswith("| a.fz")][0].strip("|").split("|")]
    check(len(cells) == 10, cells)
    check(cells[3].startswith("100.00") and cells[5].startswith("80.00") and
          cells[6] == "-20.0%" and cells[8].startswith("90.00") and
          cells[9] == "-10.0%", cells)


def test_switch_of_two_variables(tmp):
    # one side with both variables set, one with the second alone; the
    # default side with neither, even where the caller's environment has
    # one of them
    os.environ["FZ_TEST_OTHER"] = "1"
    try:
        rc, out, _, calls = run(tmp, ["a.fz:M=8", "--rounds", "2"], mode="both",
                                switches=("FZ_TEST_SWITCH=0  FZ_TEST_OTHER=1",
                                          "FZ_TEST_OTHER=1"))
    finally:
        del os.environ["FZ_TEST_OTHER"]
    check(rc == 0, "exit status %d: %s" % (rc, out))
    check([c.split()[0] for c in calls] ==
          ["default", "both", "other", "both", "other", "default"],
          "order %s" % calls)
    check("# A/B of FZ_TEST_SWITCH=0 FZ_TEST_OTHER=1, FZ_TEST_OTHER=1" in out, out)
    cells = [c.strip() for c in
             [l for l in out.splitlines() if l.startswith("| a.fz")][0].strip("|").split("|")]
    check(cells[5].startswith("70.00") and cells[6] == "-30.0%" and
          cells[8].startswith("90.00") and cells[9] == "-10.0%", cells)
    for bad in ("FZ_A=1 junk", "FZ_A=1 FZ_A=2", "  "):
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = ab.main(["--switch", bad, "a.fz:M=8"])
        check(rc == 2 and "NAME=VALUE" in err.getvalue(), "%r: %s" % (bad, err.getvalue()))


def run_tests(tests, name):
    """Each test in a scratch folder of its own; every failure reported,
    then exit status 1."""
    failed = 0
    for t in tests:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                t(tmp)
            except AssertionError as e:
                failed += 1
                print("FAIL %s: %s" % (t.__name__, e))
    print("%s: %d passed, %d failed" % (name, len(tests) - failed, failed))
    return 1 if failed else 0


def main():
    return run_tests([test_table_order_and_best_round, test_commit_of_the_build,
                      test_failed_side, test_skipped_without_gpu,
                      test_bad_arguments, test_rows_file,
                      test_two_switches_one_default,
                      test_switch_of_two_variables], "bench ab")


if __name__ == "__main__":
    sys.exit(main())
