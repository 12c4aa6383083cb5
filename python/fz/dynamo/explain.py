"""fz.explain(fn, *inputs): what the backend makes of fn.

Compiles fn with torch.compile and the fz backend, runs it once on the
inputs (and, with backward=True, runs backward from the sum of its
floating outputs, which fills .grad of what requires it), and prints each
ATen graph AOTAutograd produced: every fusion with its ops and the
scheduler fz chose for each of its kernels, every group fz refused and
why, and every node left to ATen and why. dynamo's caches are reset
first, so that fn is compiled anew with this backend.
"""

import collections


def explain(fn, *inputs, backward=False, dynamic=None, file=None):
    import torch
    from .compiler import Session, make_backend

    session = Session(keep=True)
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=make_backend(session),
                             dynamic=dynamic)
    out = compiled(*inputs)
    if backward:
        leaves = [o for o in _tensors(out)
                  if o.requires_grad and o.is_floating_point()]
        if leaves:
            sum(o.float().sum() for o in leaves).backward()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    text = render(session)
    print(text, file=file)
    return text


def _tensors(out):
    import torch
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _tensors(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _tensors(o)]
    return []


def _short(op):
    return op.replace("aten.", "").replace(".default", "")


def render(session):
    lines = []
    fusions = sum(len(g.fusions) for g in session.graphs)
    lines.append("fz: %d graph(s), %d fusion(s)" % (len(session.graphs),
                                                     fusions))
    for g in session.graphs:
        lines.append("graph %d (%s): %d fusion(s), %d ATen op(s)"
                     % (g.index, g.kind, len(g.fusions), len(g.aten)))
        for f in g.fusions:
            call = f.call
            if call.fallback:
                sched = "ran as ATen: " + call.fallback
            else:
                names = call.schedulers()
                sched = ", ".join(names) if names else "not run yet"
            lines.append("  fusion %s: %d op(s) [%s]; scheduler: %s"
                         % (f.name, len(f.ops),
                            ", ".join(_short(o) for o in f.ops), sched))
        for ops, why in g.rejected:
            lines.append("  refused group [%s]: %s"
                         % (", ".join(_short(o) for o in ops), why))
        counts = collections.Counter(g.aten)
        for (op, why), n in sorted(counts.items()):
            lines.append("  ATen %s%s: %s" % (_short(op),
                                              " x%d" % n if n > 1 else "", why))
    return "\n".join(lines)
