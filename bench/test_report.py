#!/usr/bin/env python3
"""bench.py's report without a GPU or torch: --help, the main table rebuilt
from a saved report's results.json as that report has it, and the long
rows and the size sweep from saved numbers, merged from two runs (a row
measured twice as the later run has it, fz's failures listed with their
error lines, every kind's fusions named, cross-entropy's rows and checks
among them), and the commit the report names. Exits 1 on the first
difference."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = [sys.executable, os.path.join(HERE, "bench.py")]
SAVED = os.path.join(HERE, "reports", "2026-11-30-h200-fair")


def run(*args):
    p = subprocess.run(BENCH + list(args), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench.py %s failed:\n%s%s" % (" ".join(args), p.stdout, p.stderr))
    return p.stdout


def check(cond, what):
    if not cond:
        sys.exit("FAILED: " + what)


def table(md):
    return [l for l in md.splitlines() if l.startswith("|")]


def point(name, n, fz, extra):
    row = dict(workload=name, bytes=n, fz_us=fz, eager_us=200.0,
               compile_us=150.0, iters=50, copy_gbs=4000.0)
    row.update(extra)
    return row


def check_build_commit(tmp):
    """The report's commit comes from fuse-run --version when it names
    one, so that a report made in a copied tree names the build that ran."""
    sys.path.insert(0, HERE)
    import bench
    fake = os.path.join(tmp, "fuse-run")
    for line, want in (("fuse-run (fz) 0.1.0, commit 0123abc", "0123abc"),
                       ("fuse-run (fz) 0.1.0, commit 0123abc-dirty",
                        "0123abc-dirty"),
                       ("fuse-run (fz) 0.1.0, commit unknown", None),
                       ("fuse-run (fz) 0.1.0", None)):
        with open(fake, "w") as fh:
            fh.write("#!/bin/sh\necho '%s'\necho 'LLVM version 19.1.7'\n"
                     % line)
        os.chmod(fake, 0o755)
        got = bench.build_commit(fake)
        check(got == want, "build_commit of %r: %r" % (line, got))
    check(bench.build_commit(os.path.join(tmp, "missing")) is None,
          "build_commit of a missing fuse-run")


class FakeTensor:
    def __init__(self, n, size):
        self.n, self.size = n, size

    def numel(self):
        return self.n

    def element_size(self):
        return self.size


def check_written_bytes():
    """What the steady flush writes before a run: the bytes of every tensor
    the call returns, nested or not, and nothing for other values."""
    sys.path.insert(0, HERE)
    import bench
    got = bench.written_bytes((FakeTensor(10, 4), [FakeTensor(3, 2), None], 7))
    check(got == 46, "written bytes of nested outputs: %s" % got)
    check(bench.written_bytes(None) == 0, "no bytes for no tensor")


def main():
    check("--sweep-only" in run("--help"), "--help lists --sweep-only")
    check_written_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        check_build_commit(tmp)

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "saved")
        run("--from-json", os.path.join(SAVED, "results.json"), "--report", out)
        with open(os.path.join(SAVED, "report.md")) as fh:
            want = table(fh.read())
        with open(os.path.join(out, "report.md")) as fh:
            got = fh.read()
        check(table(got) == want, "the saved report's table, rebuilt")
        check("## Long rows" not in got and "## Size sweep" not in got,
              "no long-row or sweep section without their numbers")

        long_row = dict(group="long_rows", kind="softmax forward", dtype="bf16")
        first = dict(device="GPU", copy_gbs=4000.0, iters=50, sweep=[], results=[
            point("softmax forward bf16 65536x4096", 1 << 30, 300.0,
                  dict(long_row, m=65536, n=4096, fz_plan="inner-persistent")),
            point("softmax forward bf16 1024x262144", 1 << 30, None,
                  dict(long_row, m=1024, n=262144,
                       fz_error="fuse-run: no scheduler takes it")),
            point("cross-entropy backward f32 32768x4096", 1 << 30, 280.0,
                  dict(group="long_rows", kind="cross-entropy backward",
                       dtype="f32", m=32768, n=4096, fz_plan="pointwise"))],
            checks=[dict(check="softmax backward", max_abs_err=1e-16, ok=True),
                    dict(check="cross-entropy forward", max_abs_err=2e-15,
                         ok=True)])
        second = dict(device="GPU", copy_gbs=4100.0, iters=30, flush="write",
                      results=[
            point("softmax forward bf16 65536x4096", 1 << 30, 250.0,
                  dict(long_row, m=65536, n=4096, fz_plan="inner-persistent"))],
            checks=[dict(check="softmax backward", max_abs_err=1e-16, ok=True)],
            sweep=[point("[%d, 8192]" % m, 4 * m * 8192, 100.0 * m,
                         dict(family="inner", fz_plan="inner-reduction"))
                   for m in (32, 128)])
        paths = []
        for name, data in (("first", first), ("second", second)):
            paths.append(os.path.join(tmp, name + ".json"))
            with open(paths[-1], "w") as fh:
                json.dump(data, fh)
        out = os.path.join(tmp, "merged")
        run("--from-json", ",".join(paths), "--report", out)
        with open(os.path.join(out, "report.md")) as fh:
            got = fh.read()
        rows = [l for l in table(got) if "65536x4096" in l]
        check(len(rows) == 1 and "| 250.0 |" in rows[0],
              "a row measured twice, once, as the later run has it: %s" % rows)
        check("- softmax forward bf16 1024x262144: `fuse-run: no scheduler "
              "takes it`" in got, "fz's error line listed")
        check(got.count("softmax backward: max abs error") == 1,
              "a check made by both runs, once")
        for kind, stem in (("cross-entropy forward", "cross_entropy"),
                           ("cross-entropy backward", "cross_entropy_backward")):
            check("| %s | bench/fusions/%s_bf16.fz | bench/fusions/%s.fz |"
                  % (kind, stem, stem) in got, "%s's fusions named" % kind)
        rows = [l for l in table(got) if "cross-entropy backward f32" in l]
        check(len(rows) == 1 and "| 280.0 |" in rows[0]
              and rows[0].endswith("| pointwise |"),
              "a cross-entropy row with its time and kernel: %s" % rows)
        check("- cross-entropy forward: max abs error 2e-15, ok" in got,
              "cross-entropy's check listed")
        check("## Size sweep" in got and "### inner reduction" in got,
              "the sweep's section and its family's table")
        check(sum(l.startswith("| [") for l in table(got)) == 2,
              "a sweep table row per size")
        check("4000, 4100 GB/s" in got, "both runs' copies named")
        check("256 MiB L2-evicting write, so" in got,
              "a run saved without its flush was timed behind the write")
        for png in ("long_rows.png", "sweep.png"):
            check(os.path.exists(os.path.join(out, png)) or "(No chart:" in got,
                  "%s drawn, or the report says why not" % png)
        # the flush each run was timed behind, and a merge of two kinds
        first["flush"] = "steady"
        with open(paths[0], "w") as fh:
            json.dump(first, fh)
        for which, want in (([paths[0]], "256 MiB L2-evicting read and a write "
                              "of as many bytes as the run writes"),
                            (paths, "are not comparable")):
            out = os.path.join(tmp, "flush%d" % len(which))
            run("--from-json", ",".join(which), "--report", out)
            with open(os.path.join(out, "report.md")) as fh:
                check(want in fh.read(), "the report says: %s" % want)
    print("bench report: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
