"""split, split_with_sizes and unbind (torch.chunk traces as split) as the
views they are made of, so that their pieces can fuse.

AOTAutograd leaves them as one node returning a list, taken apart by
operator.getitem; fz has no list-valued op to map them to, but each piece
is a slice (an unbind's piece a select) of the operand, with the same
sizes, strides and storage offset. So each getitem becomes that slice or
select node, computing what the graph computed before, and the
partitioner treats it as any other window (translate.py: fused where a
consumer in the same fusion reads it, an ATen view where it leaves the
fusion). A split whose list is used otherwise than piece by piece, or
whose sizes are run-time values, stays as it is.
"""

import operator

from . import resize
from .translate import meta_val, node_arg, op_name

SPLITS = ("aten.split.Tensor", "aten.split_with_sizes.default",
          "aten.unbind.int")


def pieces(node):
    """The (op, args) of each piece of a split/split_with_sizes/unbind
    node, or None when its sizes are not fixed ints."""
    import torch
    aten = torch.ops.aten
    name = op_name(node.target)
    x = node.args[0]
    out = meta_val(node)
    if not isinstance(out, (list, tuple)):
        return None
    dim = node_arg(node, 2 if name != "aten.unbind.int" else 1, "dim", 0)
    if type(dim) is not int:
        return None
    if name == "aten.unbind.int":
        return [(aten.select.int, (x, dim, k)) for k in range(len(out))]
    if name == "aten.split.Tensor":
        size = node_arg(node, 1, "split_size", None)
        if type(size) is not int:
            return None
        bounds = resize.split_bounds(size, len(out))
    else:
        sizes = node_arg(node, 1, "split_sizes", None)
        if not isinstance(sizes, (list, tuple)) or \
                any(type(s) is not int for s in sizes):
            return None
        bounds = resize.split_with_sizes_bounds(sizes)
    if len(bounds) != len(out):
        return None
    return [(aten.slice.Tensor, (x, dim, start, end))
            for start, end in bounds]


def split_into_views(graph):
    """Rewrites every split/split_with_sizes/unbind taken apart only by
    getitems into one slice or select per piece. Returns whether the
    graph changed."""
    changed = False
    for node in list(graph.nodes):
        if node.op != "call_function" or op_name(node.target) not in SPLITS:
            continue
        users = list(node.users)
        if not users or not all(u.op == "call_function" and
                                u.target is operator.getitem and
                                type(u.args[1]) is int for u in users):
            continue
        views = pieces(node)
        if views is None:
            continue
        for u in users:
            target, args = views[u.args[1]]
            with graph.inserting_before(u):
                view = graph.call_function(target, args)
            view.meta = dict(u.meta)
            u.replace_all_uses_with(view)
            graph.erase_node(u)
        graph.erase_node(node)
        changed = True
    return changed
