#!/usr/bin/env python3
"""Host overhead per call of the Python front end, next to PyTorch's.

For x*2+1 on a CUDA tensor of 1024 f32 elements (the GPU's work is
negligible, so the host's cost is what shows), in one process:
  - fz: FusionDefinition.execute (argument checks, output allocation by
    torch, fz_executor_run through ctypes);
  - fz, the C call alone: fz_executor_run through ctypes with the argument
    arrays fz built for the call (what remains if Python did nothing else);
  - PyTorch eager: x * 2 + 1 (two kernel launches);
  - torch.compile (default mode), and with mode="reduce-overhead" (CUDA
    graphs), where they compile.
Each is called many times: "host us/call" times the calls alone, in
batches smaller than the driver's launch queue with an untimed synchronize
between batches (a full queue would make each call wait for the GPU);
"with sync us/call" is N calls back to back with time.perf_counter and
one synchronize at the end, divided by N. Results are checked once
against eager before timing.

usage: FZ_LIBRARY=build/lib/libfz.so python3 bench/latency.py [--calls N]
           [--json FILE]
Exits 77 (skipped) without torch or a GPU.
"""
import argparse
import ctypes
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "python"))

BATCH = 250


def time_calls(fn, calls, sync):
    for _ in range(200):
        fn()
    sync()
    host = 0.0
    done = 0
    while done < calls:
        n = min(BATCH, calls - done)
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        host += time.perf_counter() - t0
        sync()
        done += n
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    wall = time.perf_counter() - t0
    return 1e6 * host / calls, 1e6 * wall / calls


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--json", default="")
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print("SKIPPED: no torch (%s)" % e)
        return 77
    if not torch.cuda.is_available():
        print("SKIPPED: no GPU (torch.cuda.is_available() is False)")
        return 77
    import fz

    x = torch.randn(1024, device="cuda")
    sync = torch.cuda.synchronize
    rows = []

    with fz.FusionDefinition("axpb") as fd:
        t = fd.define_tensor([-1], torch.float32)
        fd.add_output(t * 2.0 + 1.0)
    (y,) = fd.execute([x])
    eager = lambda: x * 2 + 1
    assert torch.equal(y, eager()), "fz's x*2+1 differs from PyTorch's"
    args_list = [x]
    rows.append(("fz: FusionDefinition.execute",
                 time_calls(lambda: fd.execute(args_list), args.calls, sync)))

    # The C call alone, with the arrays fz prepared for this signature and
    # the output of the last call as a preallocated one.
    (call,) = fd._calls.values()
    out = fd.execute(args_list)[0]
    call.inputs[call.in_data[0]] = x.data_ptr()
    call.outputs[call.out_alloc[0][0]] = out.data_ptr()
    built = call.built
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    run, ex, ins, outs, err = (built.run, built.executor, call.inputs,
                               call.outputs, built.err_ref)

    def c_only():
        if run(ex, ins, 1, outs, 1, stream, err):
            raise RuntimeError(built.err.message.decode())
    rows.append(("fz: fz_executor_run via ctypes only", time_calls(c_only, args.calls, sync)))

    rows.append(("PyTorch eager: x * 2 + 1 (2 launches)",
                 time_calls(eager, args.calls, sync)))
    if not args.no_compile:
        for mode in (None, "reduce-overhead"):
            label = "torch.compile" + ("" if mode is None else " (%s)" % mode)
            try:
                cfn = torch.compile(lambda x: x * 2 + 1, mode=mode)
                for _ in range(3):
                    z = cfn(x)
                assert torch.equal(z, eager()), label + " differs"
                rows.append((label, time_calls(lambda: cfn(x), args.calls, sync)))
            except Exception as e:  # report, don't hide
                print("# %s failed: %s" % (label, e), file=sys.stderr)
                rows.append((label, (None, None)))

    print("\n%s, torch %s, fz %s; x*2+1 on f32[1024], %d calls\n" % (
        torch.cuda.get_device_name(), torch.__version__, fz.version(), args.calls))
    print("| path | host us/call | with sync us/call |")
    print("|---|---|---|")
    f = lambda v: "—" if v is None else "%.2f" % v
    for label, (host, wall) in rows:
        print("| %s | %s | %s |" % (label, f(host), f(wall)))
    print("\nhost: the calls alone (batches of %d, synchronized between "
          "batches, untimed); with sync: %d calls back to back, one "
          "synchronize." % (BATCH, args.calls))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(device=torch.cuda.get_device_name(),
                           torch=torch.__version__, calls=args.calls,
                           rows=[dict(path=l, host_us=h, sync_us=w)
                                 for l, (h, w) in rows]), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
