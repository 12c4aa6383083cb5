#!/usr/bin/env python3
"""Whole models through torch.compile(backend="fz") against eager PyTorch:
a GPT-2 decoder block, a Llama decoder block, a ResNet basic block in
channels-last with BatchNorm in training mode, and a language-model head
with cross-entropy over 32,000 tokens (fzmodels.py builds them; nothing
is downloaded), each in f32 and in bf16 under autocast.

Per model and precision, two copies start from the same parameters, one
run eagerly, one compiled with backend="fz":
  1. one forward and backward on a fixed batch: the output (or loss), the
     gradient of every parameter and of the input, and every buffer
     (BatchNorm's running statistics) must match eager's;
  2. then 20 optimizer steps (SGD, lr 1e-2, momentum 0.9) on that batch:
     the two loss curves must agree at every step.
Tolerances: values through fzcheck.tolerances(precision, K, max|eager|)
times SLACK = 4, K being the model's longest reduction (the hidden or MLP
width, batch*seq tokens for weight gradients, N*H*W for BatchNorm, the
vocabulary); precision is bf16 for every value under autocast (f32
gradients of bf16 work included), so bf16 allows rtol 6.4e-2 and atol
about 0.03 of the largest element. Losses: |fz - eager| <= LOSS_RTOL *
max(1, |eager|), 1e-4 in f32 and 2e-2 in bf16.
TF32 is off for matmuls and convolutions (both paths run the same
ATen kernels on them; TF32 would add noise of 1e-3 to f32 comparisons).
Dropout: the comparison runs with p = 0 (dropout's random masks differ
between eager and compiled code); separately a GPT-2 block with p = 0.1
trains for 3 steps compiled (finite losses and gradients, two forward
passes in training mode differ) and then, in eval mode, must match eager.

Prints one PASS/FAIL line per model and precision and a summary; exits 1
on any failure. Sizes: --size small (default, seconds), medium or large
(fzmodels.SIZES). Run from the repository root:
    FZ_LIBRARY=build/lib/libfz.so python3 python/tests/test_models.py
        [--size small] [--models gpt2,llama,resnet,ce] [--precisions f32,bf16]
        [--steps 20]
FZ_TEST_SEED repeats a run. Without torch, CUDA or a GPU it prints
"SKIPPED: ..." and exits 77. Registered in ctest as gpu/python_models.
"""

import argparse
import contextlib
import copy
import math
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir))

import fzcheck  # noqa: E402

torch = fzcheck.require_torch_cuda()

import fz  # noqa: E402,F401  (registers backend="fz")
import fzmodels  # noqa: E402

DEV = torch.device("cuda", 0)
# Full f32 matmuls and convolutions: with TF32 a layout difference alone
# (another cuDNN algorithm) would move f32 results by 1e-3.
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
SLACK = 4
LOSS_RTOL = {"f32": 1e-4, "bf16": 2e-2}
LR = 1e-2


def autocast(precision):
    if precision == "bf16":
        return lambda: torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext


def close(got, want, what, k, precision, layout=True):
    prec = torch.bfloat16 if precision == "bf16" else None
    scale = fzcheck.magnitude(want)
    r, a = fzcheck.tolerances(prec or want.dtype, k, scale)
    fzcheck.check(got, want, what, n=k, rtol=r * SLACK, atol=a * SLACK,
                  layout=layout)


def fresh_inputs(wl):
    """The batch, with the floating inputs of the blocks requiring grad
    (a block inside a network passes a gradient to the layer before)."""
    return tuple(x.detach().clone().requires_grad_(x.is_floating_point())
                 for x in wl.inputs)


def compare(name, size, precision, steps, seed):
    """Step 1 (values and gradients) and the loss curves; returns a
    one-line summary, raises AssertionError on a mismatch."""
    torch.manual_seed(seed)
    wl = fzmodels.build(name, size, DEV)
    eager = wl.model.train()
    mine = copy.deepcopy(eager)
    compiled = torch.compile(mine, backend="fz")
    ctx = autocast(precision)
    k = wl.reduce_len
    opt_e = torch.optim.SGD(eager.parameters(), lr=LR, momentum=0.9)
    opt_f = torch.optim.SGD(mine.parameters(), lr=LR, momentum=0.9)

    losses_e, losses_f = [], []
    for step in range(steps):
        opt_e.zero_grad(set_to_none=True)
        opt_f.zero_grad(set_to_none=True)
        in_e, in_f = fresh_inputs(wl), fresh_inputs(wl)
        with ctx():
            out_e, loss_e = wl.loss(eager, in_e)
            out_f, loss_f = wl.loss(compiled, in_f)
        loss_e.backward()
        loss_f.backward()
        if step == 0:
            close(out_f, out_e, "forward output", k, precision)
            grads = 0
            for (pn, pe), (_, pf) in zip(eager.named_parameters(),
                                         mine.named_parameters()):
                if pe.grad is None or pf.grad is None:
                    raise AssertionError("%s: gradient %s eager, %s fz" % (
                        pn, pe.grad is not None, pf.grad is not None))
                close(pf.grad, pe.grad, "grad of %s" % pn, k, precision,
                      layout=False)
                grads += 1
            for i, (xe, xf) in enumerate(zip(in_e, in_f)):
                if xe.requires_grad:
                    close(xf.grad, xe.grad, "grad of input %d" % i, k,
                          precision, layout=False)
            for (bn, be), (_, bf) in zip(eager.named_buffers(),
                                         mine.named_buffers()):
                if be.is_floating_point():
                    close(bf, be, "buffer %s" % bn, k, precision,
                          layout=False)
                else:
                    assert torch.equal(bf, be), "buffer %s" % bn
        opt_e.step()
        opt_f.step()
        losses_e.append(loss_e.detach().float())
        losses_f.append(loss_f.detach().float())

    le = [float(v) for v in losses_e]
    lf = [float(v) for v in losses_f]
    worst = 0.0
    for i, (a, b) in enumerate(zip(lf, le)):
        if not (math.isfinite(a) and math.isfinite(b)):
            raise AssertionError("step %d: loss fz %r, eager %r" % (i, a, b))
        d = abs(a - b) / max(1.0, abs(b))
        worst = max(worst, d)
        if d > LOSS_RTOL[precision]:
            raise AssertionError(
                "step %d: loss fz %.7g, eager %.7g (relative %.2g > %.2g); "
                "curves: fz %s, eager %s" % (
                    i, a, b, d, LOSS_RTOL[precision],
                    ["%.5g" % v for v in lf], ["%.5g" % v for v in le]))
    return ("%s; output, %d parameter grads, input grad, buffers; %d steps, "
            "loss %.5g -> %.5g, worst relative loss difference %.2g"
            % (wl.note, grads, steps, le[0], le[-1], worst))


def dropout_check(size, seed):
    """GPT-2 block with dropout 0.1: trains compiled; masks are random;
    eval mode matches eager."""
    torch.manual_seed(seed)
    wl = fzmodels.build("gpt2", size, DEV, dropout=0.1)
    model = wl.model.train()
    compiled = torch.compile(model, backend="fz")
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    for step in range(3):
        opt.zero_grad(set_to_none=True)
        _, loss = wl.loss(compiled, wl.inputs)
        loss.backward()
        assert math.isfinite(float(loss)), "step %d: loss %r" % (step, loss)
        for pn, p in model.named_parameters():
            assert p.grad is not None and bool(torch.isfinite(p.grad).all()), \
                "step %d: gradient of %s missing or not finite" % (step, pn)
        opt.step()
    with torch.no_grad():
        a = compiled(*wl.inputs)
        b = compiled(*wl.inputs)
        assert not torch.equal(a, b), "dropout 0.1: two training-mode " \
            "forwards gave equal outputs"
        model.eval()
        close(compiled(*wl.inputs), model(*wl.inputs), "eval-mode output",
              wl.reduce_len, "f32")
    return "3 training steps, random masks, eval mode equals eager"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="small", choices=sorted(fzmodels.SIZES))
    ap.add_argument("--models", default=",".join(fzmodels.NAMES))
    ap.add_argument("--precisions", default="f32,bf16")
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    size = fzmodels.SIZES[args.size]
    seed = fzcheck.seed()
    print("fz %s, torch %s on %s, seed %d, size %s" % (
        getattr(fz, "__version__", "?"), torch.__version__,
        torch.cuda.get_device_name(DEV), seed, args.size))

    results = []

    def run(label, fn):
        torch._dynamo.reset()
        try:
            note = fn()
            torch.cuda.synchronize()
            results.append(True)
            print("PASS %s: %s" % (label, note))
        except Exception as e:  # report every model, then fail
            results.append(False)
            print("FAIL %s: %s: %s" % (label, type(e).__name__, e))
            if not isinstance(e, AssertionError):
                traceback.print_exc()

    for name in [m for m in args.models.split(",") if m]:
        for precision in [p for p in args.precisions.split(",") if p]:
            if precision not in LOSS_RTOL:
                ap.error("precision %r: f32 or bf16" % precision)
            run("%s %s" % (name, precision),
                lambda: compare(name, size, precision, args.steps, seed))
    if "gpt2" in args.models.split(","):
        run("gpt2 dropout 0.1", lambda: dropout_check(size, seed))
    failed = results.count(False)
    print("%d passed, %d failed" % (results.count(True), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
