#!/usr/bin/env python3
"""Training-step benchmark: four models through eager PyTorch,
torch.compile (Inductor, default mode) and torch.compile(backend="fz"),
in one process on one GPU.

The models are python/tests/fzmodels.py's (a GPT-2 and a Llama decoder
block, a channels-last ResNet basic block with BatchNorm in training mode,
a language-model head with cross-entropy over 32,000 tokens), at the
"large" preset by default: decoder blocks at batch 8, seq 2048, hidden
4096; the ResNet block at 32x256x56x56; cross-entropy over 8*2048 tokens;
bf16 autocast. A step is forward, backward and optimizer step (AdamW,
foreach, the same eager optimizer for every path), with the model
compiled and the loss and optimizer outside it.

Per model and path:
  - step ms: median over --steps steps, each timed with CUDA events after
    --warmup steps, steps enqueued back to back as a training loop does
    and the events read after the last; unlike bench.py there is no L2
    flush between runs (a step's working set is far beyond L2), and host
    overhead a step cannot hide behind GPU work counts, as in training;
  - kernels/step: CUDA kernels of one profiled step (torch.profiler,
    the trace's "kernel" events; memcpy and memset counted apart);
  - cold s: wall time of the first step after torch._dynamo.reset(), which
    compiles the forward and backward graphs. Inductor's, Triton's and
    fz's disk caches point at a fresh temporary directory (set before
    torch is imported), so nothing compiled by an earlier run is reused;
    kernels compiled earlier in this process (another path, another
    model) may still be reused in memory, so for strictly cold numbers run
    one model and one path per process (--models X --modes Y);
  - peak GiB: torch.cuda.max_memory_allocated over the timed steps.

usage: FZ_LIBRARY=build/lib/libfz.so python3 bench/models.py
           [--models gpt2,llama,resnet,ce] [--modes eager,inductor,fz]
           [--size large] [--batch B] [--seq T] [--hidden D] [--heads H]
           [--resnet N,C,H,W] [--tokens T] [--ce-hidden D] [--vocab V]
           [--precision bf16|f32] [--steps K] [--warmup W]
           [--cache-dir DIR] [--out FILE] [--json FILE]
Prints a Markdown table (and writes it to --out). Exits 77 (skipped)
without torch or a GPU.
"""
import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "python"))
sys.path.insert(0, os.path.join(HERE, os.pardir, "python", "tests"))

MODES = ["eager", "inductor", "fz"]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="gpt2,llama,resnet,ce")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--size", default="large",
                    help="preset of python/tests/fzmodels.py: small, medium, "
                         "large (default)")
    ap.add_argument("--batch", type=int)
    ap.add_argument("--seq", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--resnet", help="N,C,H,W")
    ap.add_argument("--tokens", type=int, help="cross-entropy tokens")
    ap.add_argument("--ce-hidden", type=int, help="cross-entropy hidden size")
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--precision", default="bf16", choices=["bf16", "f32"])
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--cache-dir", default="",
                    help="compile caches here (kept) instead of a fresh "
                         "temporary directory")
    ap.add_argument("--out", default="", help="write the table here")
    ap.add_argument("--json", default="", help="write the raw numbers here")
    return ap.parse_args()


def point_caches(root):
    """Inductor's, Triton's and fz's disk caches under root. Must run
    before torch is imported."""
    for var, sub in [("TORCHINDUCTOR_CACHE_DIR", "inductor"),
                     ("TRITON_CACHE_DIR", "triton"), ("FZ_CACHE_DIR", "fz")]:
        os.environ[var] = os.path.join(root, sub)
        os.makedirs(os.environ[var], exist_ok=True)


def sizes(args, presets):
    s = dict(presets[args.size])
    for key in ("batch", "seq", "hidden", "heads", "tokens", "vocab"):
        if getattr(args, key) is not None:
            s[key] = getattr(args, key)
    if args.ce_hidden is not None:
        s["ce_hidden"] = args.ce_hidden
    if args.resnet:
        s["resnet"] = tuple(int(v) for v in args.resnet.split(","))
    return s


def count_kernels(step):
    """(kernels, memcpy+memset) on the GPU during one step."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as fh:
            trace = json.load(fh)
    finally:
        os.unlink(path)
    events = trace.get("traceEvents", trace) if isinstance(trace, dict) else trace
    cats = [str(e.get("cat", "")).lower() for e in events if isinstance(e, dict)]
    return (cats.count("kernel"),
            cats.count("gpu_memcpy") + cats.count("gpu_memset"))


def bench_one(name, mode, size, args):
    import torch
    import fzmodels
    torch._dynamo.reset()
    torch.manual_seed(0)
    wl = fzmodels.build(name, size, torch.device("cuda"))
    model = wl.model.train()
    if mode == "eager":
        fn = model
    elif mode == "inductor":
        fn = torch.compile(model)
    else:
        fn = torch.compile(model, backend="fz")
    inputs = tuple(x.requires_grad_() if x.is_floating_point() else x
                   for x in wl.inputs)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    autocast = args.precision == "bf16"

    def step():
        opt.zero_grad(set_to_none=True)
        for x in inputs:
            x.grad = None
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            _, loss = wl.loss(fn, inputs)
        loss.backward()
        opt.step()
        return loss

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    first = step()
    torch.cuda.synchronize()
    cold = time.perf_counter() - t0
    if not torch.isfinite(first).item():
        raise RuntimeError("first loss is %s" % first.item())
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    events = [(torch.cuda.Event(enable_timing=True),
               torch.cuda.Event(enable_timing=True)) for _ in range(args.steps)]
    for a, b in events:
        a.record()
        step()
        b.record()
    torch.cuda.synchronize()
    times = sorted(a.elapsed_time(b) for a, b in events)
    peak = torch.cuda.max_memory_allocated() / 2 ** 30
    kernels, copies = count_kernels(step)
    return dict(model=name, mode=mode, note=wl.note, step_ms=times[len(times) // 2],
                kernels=kernels, copies=copies, cold_s=cold, peak_gib=peak)


def fmt(v, spec):
    return "—" if v is None else format(v, spec)


def table(rows):
    lines = ["| model | path | step ms | vs eager | kernels/step | memcpy+set/step "
             "| cold s | peak GiB |",
             "|---|---|---|---|---|---|---|---|"]
    eager = {r["model"]: r.get("step_ms") for r in rows if r["mode"] == "eager"}
    for r in rows:
        base = eager.get(r["model"])
        ms = r.get("step_ms")
        speed = base / ms if base and ms else None
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["model"], r["mode"], fmt(ms, ".2f"),
            fmt(speed, ".2f") + ("x" if speed else ""),
            fmt(r.get("kernels"), "d"), fmt(r.get("copies"), "d"),
            fmt(r.get("cold_s"), ".1f"), fmt(r.get("peak_gib"), ".1f")))
    return "\n".join(lines)


def main():
    args = parse_args()
    root = args.cache_dir or tempfile.mkdtemp(prefix="fz-bench-models-")
    point_caches(root)
    try:
        return run(args)
    finally:
        if not args.cache_dir:
            shutil.rmtree(root, ignore_errors=True)


def run(args):
    try:
        import torch
    except ImportError as e:
        print("SKIPPED: no torch (%s)" % e)
        return 77
    if not torch.cuda.is_available():
        print("SKIPPED: no GPU (torch.cuda.is_available() is False)")
        return 77
    import fz
    import fzmodels
    from bench import driver_version, git_commit

    if args.size not in fzmodels.SIZES:
        print("unknown --size %r (one of %s)" % (args.size,
                                                 ", ".join(fzmodels.SIZES)))
        return 2
    size = sizes(args, fzmodels.SIZES)
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            print("unknown mode %r (one of %s)" % (m, ", ".join(MODES)))
            return 2
    rows, notes = [], {}
    for name in [m for m in args.models.split(",") if m]:
        for mode in modes:
            try:
                r = bench_one(name, mode, size, args)
                notes[name] = r.pop("note")
            except Exception as e:  # report, don't hide
                print("# %s %s failed: %s: %s" % (name, mode,
                                                  type(e).__name__, e),
                      file=sys.stderr)
                r = dict(model=name, mode=mode, error=str(e))
            rows.append(r)
            print("# %s" % r, file=sys.stderr)
            torch.cuda.empty_cache()

    head = ("%s, driver %s, torch %s, fz %s (commit %s), %s; %s autocast, "
            "AdamW; median of %d steps after %d warm-up steps" % (
                torch.cuda.get_device_name(), driver_version(),
                torch.__version__, getattr(fz, "__version__", fz.version()),
                git_commit(), datetime.datetime.now(datetime.timezone.utc)
                .strftime("%Y-%m-%d %H:%M UTC"),
                args.precision if args.precision == "bf16" else "no",
                args.steps, args.warmup))
    sizes_line = "; ".join("%s: %s" % (k, v) for k, v in notes.items())
    text = "%s\n\n%s\n\n%s\n" % (head, sizes_line, table(rows))
    print("\n" + text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(header=head, sizes=notes, rows=rows), fh, indent=1)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
