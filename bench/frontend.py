#!/usr/bin/env python3
"""Host time of the Python front end's two kinds of call, and where it goes.

For softmax, layer norm, and layer norm with its mean and rstd as outputs
too (three outputs), one FusionDefinition of -1 sizes each (f32):
  - a *new size* whose pattern is built (the fusion and its executor exist;
    the kernel of the size class is compiled): the call checks the inputs,
    finds the pattern, asks libfz for the outputs' layouts, allocates and
    runs, and libfz takes its own signature miss (stats' miss_seconds);
  - a *repeated* call (same sizes again): pointers, outputs, the launch.
Printed per fusion, medians in microseconds:
  miss        the new size's call, wall clock (the GPU idle before it);
  libfz miss  what libfz's stats count for that call (miss_seconds);
  front end   miss - libfz miss - hit: the Python preparation of a new
              signature (what a repeated call does not do);
  hit         a repeated call, host time (batches of 100, synchronized
              between batches, untimed);
  C + alloc   the same call's fz_executor_run through ctypes and
              torch.empty_strided of its outputs alone;
  overhead    hit - (C + alloc): the front end's own part of a hit.
Sizes: rows 2048 + 16 k, row lengths 1000 + 8 k (k = 0..N); k = 0, which
builds and compiles, is called before timing. A later size whose plan
needs a kernel not compiled yet counts the compile in "libfz miss".

usage: FZ_LIBRARY=build/lib/libfz.so python3 bench/frontend.py [--shapes N]
Exits 77 (skipped) without torch or a GPU.
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "python"))


def softmax(fz, torch):
    with fz.FusionDefinition("softmax") as fd:
        x = fd.define_tensor([-1, -1], torch.float32)
        e = fd.ops.exp(x - fd.ops.amax(x, dims=[1], keepdim=True))
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))
    return fd


def layer_norm(fz, torch, stats=False):
    with fz.FusionDefinition("layer_norm") as fd:
        x = fd.define_tensor([-1, -1], torch.float32)
        w = fd.define_tensor([-1], torch.float32)
        b = fd.define_tensor([-1], torch.float32)
        mean = fd.ops.mean(x, dims=[1], keepdim=True)
        d = x - mean
        rstd = fd.ops.rsqrt(fd.ops.mean(d * d, dims=[1], keepdim=True) + 1e-5)
        fd.add_output(d * rstd * w + b)
        if stats:
            fd.add_output(mean)
            fd.add_output(rstd)
    return fd


def measure(fd, inputs, shapes, torch):
    fd.execute(inputs(shapes[0]))            # builds, compiles the class
    miss, libfz = [], []
    for shape in shapes[1:]:
        args = inputs(shape)
        before = fd.stats()["miss_seconds"]
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fd.execute(args)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        miss.append(1e6 * (t1 - t0))
        libfz.append(1e6 * (fd.stats()["miss_seconds"] - before))
    args = inputs(shapes[-1])
    call = fd._calls[_signature(args)]
    built = call.built
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    n, m = len(call.in_data), len(call.out_alloc)

    def c_and_alloc():
        for _, sizes, strides, dtype in call.out_alloc:
            torch.empty_strided(sizes, strides, dtype=dtype,
                                device=call.device)
        if built.run(built.executor, call.inputs, n, call.outputs, m, stream,
                     built.err_ref):
            raise RuntimeError(built.err.message.decode())
    hit = host_us(lambda: fd.execute(args), torch)
    floor = host_us(c_and_alloc, torch)
    assert len(fd._built) == 1, "%d builds" % len(fd._built)
    mi, li = statistics.median(miss), statistics.median(libfz)
    return mi, li, mi - li - hit, hit, floor, hit - floor


def host_us(fn, torch, batches=50, batch=100):
    for _ in range(batch):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        times.append((time.perf_counter() - t0) / batch)
        torch.cuda.synchronize()
    return 1e6 * statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", type=int, default=40)
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
    global _signature
    from fz.fusion import _signature
    dev = "cuda"
    shapes = [(2048 + 16 * k, 1000 + 8 * k) for k in range(args.shapes + 1)]

    def sm_inputs(shape):
        return [torch.randn(*shape, device=dev)]

    def ln_inputs(shape):
        m, n = shape
        return [torch.randn(m, n, device=dev), torch.randn(n, device=dev),
                torch.randn(n, device=dev)]
    rows = [("softmax", softmax(fz, torch), sm_inputs),
            ("layer norm", layer_norm(fz, torch), ln_inputs),
            ("layer norm, 3 outputs", layer_norm(fz, torch, True), ln_inputs)]
    print("\n%s, torch %s, fz %s; %d new sizes each\n" % (
        torch.cuda.get_device_name(), torch.__version__, fz.version(),
        args.shapes))
    print("| fusion | miss | libfz miss | front end | hit | C + alloc "
          "| overhead |")
    print("|---|---|---|---|---|---|---|")
    for name, fd, inputs in rows:
        got = measure(fd, inputs, shapes, torch)
        print("| %s | %s |" % (name, " | ".join("%.1f" % v for v in got)))
    print("\nmicroseconds, medians (see the header of bench/frontend.py)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
