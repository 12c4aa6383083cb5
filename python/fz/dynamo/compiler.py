"""The torch.compile backend: AOTAutograd (functionalized ATen graphs,
forward and backward, with the decompositions of tables.DECOMPOSE), each
graph partitioned into groups of nodes fz can express (torch.fx's
CapabilityBasedPartitioner over translate.node_support), and each group
replaced by a call that runs its fz fusion. Nodes fz cannot take (matmuls,
convolutions, attention, embeddings, random numbers, CPU tensors, ...)
stay ATen calls in the graph.
"""

import heapq
import operator
import os
import threading
import warnings

from . import tables
from .splits import split_into_views
from .translate import (Translation, Unsupported, dry_build, meta_val,
                        node_support, op_name)

# ---- what was decided, for fz.explain ------------------------------------------


class FusionRecord:
    def __init__(self, name, nodes, call):
        self.name = name
        self.ops = [op_name(n.target) for n in nodes
                    if n.target is not operator.getitem]
        self.call = call


class GraphRecord:
    """What the backend did with one ATen graph."""

    def __init__(self, kind, index):
        self.kind = kind
        self.index = index
        self.fusions = []       # FusionRecord
        self.rejected = []      # (op names, reason): groups left to ATen
        self.aten = []          # (op name, reason) per ATen node


class Session:
    """The records of one torch.compile (one backend call): a graph per
    forward, backward and inference compile. Kept only when explaining."""

    def __init__(self, keep):
        self.keep = keep
        self.graphs = []
        self.counter = 0
        self.lock = threading.Lock()

    def new_graph(self, kind):
        with self.lock:
            record = GraphRecord(kind, len(self.graphs))
            if self.keep:
                self.graphs.append(record)
            return record

    def next_name(self, kind):
        with self.lock:
            self.counter += 1
            short = {"forward": "fwd", "backward": "bwd"}.get(kind, kind[:3])
            return "fz_%s%d" % (short, self.counter)


# ---- the call that replaces a group ------------------------------------------------


class FusedCall:
    """Runs a group's fusion: picks the group's arguments fz takes, runs
    the FusionDefinition (on the inputs' device and the current stream;
    fusion.py handles both), takes the ATen views of view outputs, and
    returns every output in the group's output order. When fz fails to
    run it (an error the dry build could not foresee, e.g. no scheduler
    takes the fusion), the group runs as ATen from then on and the reason
    is kept in .fallback; with FZ_DYNAMO_STRICT=1 the error is raised
    instead (for tests that must see fz run)."""

    def __init__(self, name, translation, aten_module, device_index, text):
        self.__name__ = name
        self.__qualname__ = name
        self.name = name
        self.fd = translation.fd
        self.picks = [i.index for i in translation.fz_inputs]
        self.plan = translation.out_plan
        self.aten = aten_module
        self.device_index = device_index
        self.text = text
        self.fallback = None
        self.num_outputs = len(translation.outputs)

    def __call__(self, *args):
        if self.fallback is not None:
            return tuple(self.aten(*args))
        try:
            outs = self._execute(args)
        except Exception as e:  # fz refused: ATen from now on
            if os.environ.get("FZ_DYNAMO_STRICT") == "1":
                raise
            self.fallback = "%s: %s" % (type(e).__name__, e)
            warnings.warn("fz: fusion %s runs as ATen: %s"
                          % (self.name, self.fallback))
            return tuple(self.aten(*args))
        return tuple(_produce(p, outs, args) for p in self.plan)

    def _execute(self, args):
        """Runs the fusion with the inputs' device as torch's current one:
        fz makes that device's context current on the thread and leaves it
        so, which for another device than torch's current one would change
        where later torch calls allocate; torch.cuda.device restores it."""
        import torch
        picked = [args[i] for i in self.picks]
        index = self.device_index
        if index is None or torch.cuda.current_device() == index:
            return self.fd.execute(picked, device=index)
        with torch.cuda.device(index):
            return self.fd.execute(picked, device=index)

    def schedulers(self):
        return tables.schedulers_of(self.fd.last_plan())


def _produce(plan, outs, args):
    if plan[0] == "fz":
        return outs[plan[1]]
    if plan[0] == "arg":
        return args[plan[1]]
    _, base, steps = plan
    x = _produce(base, outs, args)
    for target, step_args, kwargs in steps:
        x = target(x, *[_arg(a, args) for a in step_args], **kwargs)
    return x


def _arg(a, args):
    if isinstance(a, list):
        return [_arg(x, args) for x in a]
    if isinstance(a, tuple) and len(a) == 2 and a[0] in ("arg", "const"):
        return args[a[1]] if a[0] == "arg" else a[1]
    if isinstance(a, tuple):
        return tuple(_arg(x, args) for x in a)
    return a


def _aten_module(nodes, inputs, outputs):
    """The group's nodes as a GraphModule of their own (the ATen
    fallback), taking the group's inputs and returning its outputs as a
    tuple."""
    import torch
    graph = torch.fx.Graph()
    env = {}
    for n in inputs:
        env[n] = graph.placeholder(n.name)
        env[n].meta = dict(n.meta)
    for n in nodes:
        env[n] = graph.node_copy(n, lambda x: env[x])
    graph.output(tuple(env[n] for n in outputs))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


# ---- partitioning and rewriting a graph ----------------------------------------------


class _Support:
    """torch.fx OperatorSupport over translate.node_support, keeping the
    reason of every refusal."""

    def __init__(self):
        from torch.fx.passes.operator_support import OperatorSupportBase

        reasons = {}

        class Support(OperatorSupportBase):
            def is_node_supported(self, submodules, node):
                if node.op != "call_function":
                    return False
                why = node_support(node)
                if why is not None:
                    reasons[node] = why
                return why is None

        self.reasons = reasons
        self.support = Support()


def _group_io(nodes):
    members = set(nodes)
    inputs, seen = [], set()
    for n in nodes:
        for a in n.all_input_nodes:
            if a not in members and a not in seen:
                seen.add(a)
                inputs.append(a)
    outputs = [n for n in nodes if any(u not in members for u in n.users)]
    return inputs, outputs


def _components(nodes):
    """The connected pieces of a partition (recent partitioners put every
    supported node of a graph without cycle hazards into one partition):
    one fusion each, so that a piece fz refuses leaves the others fused."""
    members = set(nodes)
    seen, pieces = set(), []
    for start in nodes:
        if start in seen:
            continue
        piece, stack = [], [start]
        seen.add(start)
        while stack:
            n = stack.pop()
            piece.append(n)
            for m in list(n.all_input_nodes) + list(n.users):
                if m in members and m not in seen:
                    seen.add(m)
                    stack.append(m)
        pieces.append(piece)
    return pieces


def _creates_cycle(nodes, inputs):
    """Whether replacing the group by one call would close a cycle: an
    input of the group depends on one of its outputs through nodes
    outside it."""
    members = set(nodes)
    wanted = set(inputs)
    stack = [u for n in nodes for u in n.users if u not in members]
    seen = set()
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        if x in wanted:
            return True
        stack.extend(x.users)
    return False


def _device_index(nodes):
    for n in nodes:
        v = meta_val(n)
        for x in (v if isinstance(v, (tuple, list)) else [v]):
            dev = getattr(x, "device", None)
            if dev is not None and dev.type == "cuda":
                return dev.index if dev.index is not None else 0
    return None


def _replace(graph, nodes, inputs, outputs, call):
    """Replaces the group by one call of `call` and a getitem per output."""
    members = set(nodes)
    last = nodes[-1]
    with graph.inserting_after(last):
        call_node = graph.call_function(call, tuple(inputs))
    call_node.meta["val"] = tuple(meta_val(n) for n in outputs)
    anchor = call_node
    for i, out in enumerate(outputs):
        with graph.inserting_after(anchor):
            item = graph.call_function(operator.getitem, (call_node, i))
        item.meta = dict(out.meta)
        out.replace_all_uses_with(item,
                                  delete_user_cb=lambda u: u not in members)
        anchor = item
    for n in reversed(nodes):
        graph.erase_node(n)


def _graph_target(call):
    """A plain function for the graph to call (FX code generation names
    call_function targets by __name__), carrying the FusedCall."""
    def run(*args):
        return call(*args)
    run.__name__ = run.__qualname__ = call.name
    run.fz_call = call
    return run


def _has_tensor(node):
    import torch
    v = meta_val(node)
    return any(isinstance(x, torch.Tensor)
               for x in (v if isinstance(v, (tuple, list)) else [v]))


def _stable_toposort(graph):
    """Reorders the graph's nodes topologically, keeping the present order
    wherever it is already valid (a group's call sits after its last
    node; an ATen node between that was placed before the call but uses
    its outputs moves after it)."""
    nodes = list(graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    pending = {n: len(set(n.all_input_nodes)) for n in nodes}
    ready = [index[n] for n in nodes if pending[n] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        n = nodes[heapq.heappop(ready)]
        order.append(n)
        for u in n.users:
            pending[u] -= 1
            if pending[u] == 0:
                heapq.heappush(ready, index[u])
    if len(order) != len(nodes):
        raise RuntimeError("fz: the rewritten graph has a cycle")
    for prev, n in zip(order, order[1:]):
        if n.prev is not prev:
            prev.append(n)


def compile_graph(gm, example_inputs, kind, session):
    """The fw/bw/inference compiler given to AOTAutograd: rewrites gm in
    place and returns it."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

    record = session.new_graph(kind)
    # split pieces as slices, which fuse (splits.py); the graph changes
    # even when no group forms, so it is recompiled then too
    rewritten = split_into_views(gm.graph)
    support = _Support()
    partitioner = CapabilityBasedPartitioner(
        gm, support.support, allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    position = {n: i for i, n in enumerate(gm.graph.nodes)}
    groups = []
    for p in partitions:
        for nodes in _components(p.nodes):
            nodes.sort(key=lambda n: position[n])
            if any(tables.is_compute(op_name(n.target)) for n in nodes):
                groups.append(nodes)
    groups.sort(key=lambda g: position[g[0]])
    for nodes in groups:
        inputs, outputs = _group_io(nodes)
        if _creates_cycle(nodes, inputs):
            record.rejected.append(([op_name(n.target) for n in nodes],
                                    "one call would form a cycle with ATen"))
            continue
        name = session.next_name(kind)
        try:
            translation = Translation(name, nodes, inputs, outputs).build()
            text = dry_build(translation)
        except Unsupported as e:
            record.rejected.append(([op_name(n.target) for n in nodes], str(e)))
            continue
        call = FusedCall(name, translation, _aten_module(nodes, inputs, outputs),
                         _device_index(nodes), text)
        record.fusions.append(FusionRecord(name, nodes, call))
        _replace(gm.graph, nodes, inputs, outputs, _graph_target(call))
        rewritten = True
    for n in gm.graph.nodes:
        if n.op != "call_function" or n.target is operator.getitem or \
                hasattr(n.target, "fz_call") or not _has_tensor(n):
            continue
        name = op_name(n.target)
        if n in support.reasons:
            why = support.reasons[n]
        elif name in tables.VIEWS:
            why = "a view with no fz computation next to it"
        else:
            why = "in a group fz refused"
        record.aten.append((name, why))
    if rewritten:
        _stable_toposort(gm.graph)
        gm.graph.lint()
        gm.recompile()
    return gm


# ---- the backend ----------------------------------------------------------------------


def decompositions():
    """torch._decomp's decompositions of the ops in tables.DECOMPOSE that
    this torch has."""
    import torch
    from torch._decomp import get_decompositions
    packets = []
    for name in tables.DECOMPOSE:
        try:
            packets.append(getattr(torch.ops.aten, name))
        except (AttributeError, RuntimeError):
            pass  # an op this torch does not have
    return get_decompositions(packets)


def make_backend(session=None, mode=None):
    """An AOTAutograd backend whose graphs fz partitions; session keeps
    what was decided (fz.explain), mode "reduce-overhead" replays each
    compiled graph as a CUDA graph (cudagraph.py)."""
    from torch._dynamo.backends.common import aot_autograd

    session = session or Session(keep=False)

    from torch._functorch.aot_autograd import make_boxed_func

    def compiler(kind):
        def compile_fn(gm, example_inputs):
            compiled = compile_graph(gm, example_inputs, kind, session)
            if mode == "reduce-overhead":
                from .cudagraph import CudaGraphed
                compiled = CudaGraphed(compiled)
            # AOTAutograd calls with one list it may clear as it goes
            # (boxed), so that inputs die as soon as the graph is done
            # with them instead of living until the call returns.
            return make_boxed_func(compiled)
        return compile_fn

    return aot_autograd(fw_compiler=compiler("forward"),
                        bw_compiler=compiler("backward"),
                        inference_compiler=compiler("inference"),
                        decompositions=decompositions())


def backend(gm, example_inputs, mode=None, options=None, **kwargs):
    """torch.compile(model, backend="fz"): dynamo hands over an FX graph
    of torch calls and fake example inputs; AOTAutograd traces it to ATen
    and fz fuses what it can. mode="reduce-overhead" adds CUDA graphs;
    other modes and options change nothing."""
    return make_backend(None, mode)(gm, example_inputs)
