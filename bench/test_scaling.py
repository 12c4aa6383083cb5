#!/usr/bin/env python3
"""bench/scaling.py without a GPU: a fake fuse-run prints what the real
one prints (a plan, a time line) for a kernel of known fixed cost and
streaming rate, and logs each call; the tests check that the fit finds
them, the order of the passes, the best round, the rows of another plan,
the errors and the skip."""
import contextlib
import io
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scaling  # noqa: E402
from test_ab import check, fake, run_tests  # noqa: E402

# 17 us a launch, then 3500 GB/s (0.2857 us a MB); 6 bytes an element. The
# grid is min(M, 264): fewer rows than that launch another plan, which
# runs 40 us slower. The second pass runs 3 us slower (the best round is
# the first). FAKE_MODE: skip, fail (M=1024 fails), flat (no growth).
FAKE = r'''#!/usr/bin/env python3
import os, sys
if sys.argv[1:] == ["--version"]:
    print("fuse-run (fz) 0.1.0, commit 5e6f7a8")
    sys.exit(0)
log = os.environ["FAKE_LOG"]
n = sum(1 for _ in open(log)) if os.path.exists(log) else 0
with open(log, "a") as fh:
    fh.write("%s %s\n" % (sys.argv[1], sys.argv[3]))
mode = os.environ.get("FAKE_MODE", "")
if mode == "skip":
    print("fuse-run: x.fz: SKIPPED, no GPU (cannot load the CUDA driver)")
    sys.exit(77)
sizes = dict(p.split("=") for p in sys.argv[3].split(","))
m, w = int(sizes["M"]), int(sizes["N"])
if mode == "fail" and m == 1024:
    print("fuse-run: launch failed: CUDA_ERROR_LAUNCH_FAILED")
    sys.exit(1)
mb = m * w * 6 / 1e6
us = 17.0 + mb * 1000.0 / 3500.0
if mode == "flat":
    us = 50.0
grid = min(m, 264)
if grid < 264:
    us += 40.0
passes = int(os.environ.get("FAKE_SIZES", "1"))
if n >= passes:
    us += 3.0
print("plan @f inner-outer-persistent kernel=fz_inner_outer_persistent")
print("  launch grid=%d block=512x1 prefetch" % grid)
print("time: median %.4f us over 30 runs, %.4f MB moved, %d GB/s, copy 4000 GB/s, %.1f%% of copy"
      % (us, mb, mb * 1000 / us, mb * 1000 / us / 40.0))
'''


def run(tmp, args, mode="", sizes=1):
    log = os.path.join(tmp, "calls.log")
    if os.path.exists(log):
        os.remove(log)
    os.environ["FAKE_LOG"] = log
    os.environ["FAKE_MODE"] = mode
    os.environ["FAKE_SIZES"] = str(sizes)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = scaling.main(["--fuse-run", fake(tmp, FAKE)] + args)
    calls = open(log).read().split("\n")[:-1] if os.path.exists(log) else []
    return rc, out.getvalue(), err.getvalue(), calls


def row(out, size):
    lines = [l for l in out.splitlines() if l.startswith("| %d |" % size)]
    check(len(lines) == 1, "row %d: %s" % (size, out))
    return [c.strip() for c in lines[0].strip("|").split("|")]


def test_fit_finds_fixed_cost_and_rate(tmp):
    report = os.path.join(tmp, "scaling.md")
    rc, out, _, calls = run(tmp, ["x.fz", "--size", "N=8192",
                                  "--vary", "M=2048,264,1024,528",
                                  "--rounds", "2", "--report", report], sizes=4)
    check(rc == 0, "exit status %d" % rc)
    # ascending, then descending; the varied symbol last in --size
    check([c.split()[1] for c in calls] ==
          ["N=8192,M=%d" % m for m in (264, 528, 1024, 2048, 2048, 1024, 528, 264)],
          "order %s" % calls)
    check(open(report).read() == out, "report file differs from stdout")
    check("- fixed cost: 17.00 us a launch" in out, out)
    check("- streaming rate: 3500 GB/s (87.5% of the copy's 4000 GB/s)" in out, out)
    # the first pass was 3 us faster: kept, and on the line
    cells = row(out, 2048)
    check(cells[2] == "%.2f" % (17.0 + 2048 * 8192 * 6 / 1e6 / 3.5), cells)
    check(cells[7] == "+0.0%", cells)
    check(cells[8] == "%.0f%%" % (100 * 17.0 / float(cells[2])), cells)
    check(not cells[1].startswith("*"), cells)
    check("No fit" not in out and "marked *" not in out, out)


def test_other_plans_left_out(tmp):
    # M=100 and 200 launch 100 and 200 blocks, 40 us slower: marked and
    # left out, so the fit is still exact
    rc, out, _, _ = run(tmp, ["x.fz", "--size", "N=4096",
                              "--vary", "M=100,200,264,1000,3000"], sizes=5)
    check(rc == 0, "exit status %d" % rc)
    check("- fixed cost: 17.00 us a launch" in out, out)
    for m in (100, 200):
        cells = row(out, m)
        check(cells[1].startswith("* inner-outer-persistent: grid=%d" % m), cells)
        check(cells[7].endswith("(not fitted)"), cells)
    check(row(out, 264)[1] == "inner-outer-persistent: grid=264 block=512x1 prefetch",
          row(out, 264))
    check("left out of the fit" in out, out)
    # with one row of the largest size's plan, the fit takes all and says so
    rc, out, _, _ = run(tmp, ["x.fz", "--size", "N=4096", "--vary", "M=100,200,300"],
                        sizes=3)
    check(rc == 0, "exit status %d" % rc)
    check("the fit includes them" in out and "- fixed cost: 17.00" not in out, out)


def test_failed_size(tmp):
    rc, out, _, _ = run(tmp, ["x.fz", "--size", "N=8192", "--vary", "M=512,1024,2048"],
                        mode="fail", sizes=3)
    check(rc == 1, "exit status %d" % rc)
    cells = row(out, 1024)
    check(cells[1] == "exit 1: fuse-run: launch failed: CUDA_ERROR_LAUNCH_FAILED", cells)
    check("- fixed cost: 17.00 us a launch" in out, out)


def test_no_growth(tmp):
    rc, out, _, _ = run(tmp, ["x.fz", "--size", "N=8192", "--vary", "M=512,1024"],
                        mode="flat", sizes=2)
    check(rc == 0, "exit status %d" % rc)
    check("- fixed cost: 50.00 us a launch" in out, out)
    check("- streaming rate: none (the time does not grow with the bytes)" in out, out)


def test_skipped_without_gpu(tmp):
    rc, out, _, calls = run(tmp, ["x.fz", "--vary", "M=8,16,32"], mode="skip")
    check(rc == scaling.SKIPPED, "exit status %d" % rc)
    check("SKIPPED" in out and "|" not in out, out)
    check(len(calls) == 1, "ran on after the skip: %s" % calls)


def test_bad_arguments(tmp):
    for args in (["x.fz", "--vary", "M=8"], ["x.fz", "--vary", "M=8,8"],
                 ["x.fz", "--vary", "8,16"], ["x.fz", "--vary", "M=0,8"],
                 ["x.fz", "--size", "N", "--vary", "M=8,16"],
                 ["x.fz", "--size", "N=x", "--vary", "M=8,16"],
                 ["x.fz", "--vary", "M=8,16", "--rounds", "0"]):
        rc, _, err, calls = run(tmp, args)
        check(rc == 2 and "scaling.py:" in err and not calls,
              "%s: %d %s" % (args, rc, err))


def main():
    return run_tests([v for k, v in sorted(globals().items()) if k.startswith("test_")],
                     "bench scaling")


if __name__ == "__main__":
    sys.exit(main())
