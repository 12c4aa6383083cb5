"""The arguments of ATen's resize ops (slice, select, narrow, split,
constant_pad_nd, cat) read the way ATen reads them, as plain Python (no
torch), so that translate.py and its tests share one reading.

Every function takes ints (Python ints, already checked to be no
SymInts: a bound that is a graph value declines the node before these
are called) and raises ValueError for what ATen itself would refuse.
"""

import sys

# ATen's "to the end" (x[a:] traces as slice(x, dim, a, sys.maxsize)).
END = sys.maxsize


def is_whole_slice(start, end, step):
    """Whether slice(start, end, step) keeps a whole axis, whatever its
    size (x[:], x[0:]): such a slice needs no extent."""
    return start in (None, 0) and (end is None or end >= END) and step == 1


def slice_bounds(start, end, step, extent):
    """aten.slice.Tensor's window on an axis of `extent` elements, as
    (start, end) with 0 <= start <= end <= extent: None is the axis's
    start or end, negatives count from the end, and out-of-range bounds
    clamp (as x[a:b] does). Steps below 1 are refused (ATen refuses
    them too)."""
    if step < 1:
        raise ValueError("slice step %d must be positive" % step)
    lo, hi, _ = slice(start, end, step).indices(extent)
    return lo, max(lo, hi)


def narrow_bounds(start, length, extent):
    """aten.narrow's window as (start, end): a negative start counts from
    the end; the window must lie inside the axis (narrow never clamps)."""
    if start < 0:
        start += extent
    if start < 0 or length < 0 or start + length > extent:
        raise ValueError("narrow(%d, %d) is outside an axis of %d"
                         % (start, length, extent))
    return start, start + length


def select_index(index, extent):
    """aten.select.int's index on an axis of `extent` elements, counted
    from the start."""
    if not -extent <= index < extent:
        raise ValueError("select index %d is outside an axis of %d"
                         % (index, extent))
    return index % extent


def split_bounds(split_size, count):
    """aten.split.Tensor's pieces as (start, end) pairs: `count` pieces
    of split_size elements (the last may hold fewer; slicing clamps its
    end)."""
    if split_size < 1:
        raise ValueError("split size %d must be positive" % split_size)
    return [(k * split_size, (k + 1) * split_size) for k in range(count)]


def split_with_sizes_bounds(sizes):
    """aten.split_with_sizes's pieces as (start, end) pairs."""
    bounds, at = [], 0
    for s in sizes:
        if s < 0:
            raise ValueError("split size %d is negative" % s)
        bounds.append((at, at + s))
        at += s
    return bounds


def pad_widths(pad, rank):
    """aten.constant_pad_nd's pad list (pairs from the last axis
    backward) as per-axis (low, high) lists; negative widths crop."""
    pad = list(pad)
    if len(pad) % 2 or len(pad) > 2 * rank:
        raise ValueError("%d pad widths for rank %d" % (len(pad), rank))
    low, high = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        low[rank - 1 - i] = pad[2 * i]
        high[rank - 1 - i] = pad[2 * i + 1]
    return low, high


def axis_pad(rank, axis, low, high):
    """The constant_pad_nd pad list that widens only `axis` (low before,
    high after)."""
    pad = [0] * (2 * (rank - axis))
    pad[-2], pad[-1] = low, high
    return pad


def padded_axes(pad, rank):
    """The axes constant_pad_nd changes (a nonzero width on either side)."""
    low, high = pad_widths(pad, rank)
    return [k for k in range(rank) if low[k] or high[k]]


def is_legacy_empty(shape):
    """A 1-D tensor of zero elements, which torch.cat skips whatever the
    other operands' shapes (a legacy rule)."""
    return len(shape) == 1 and shape[0] == 0


def cat_operands(shapes, dim):
    """torch.cat's reading of its operands: (the positions of the operands
    that take part, the concatenation axis counted from the start). The
    legacy empty operands are left out; dim counts from the end of the
    others' rank."""
    kept = [k for k, s in enumerate(shapes) if not is_legacy_empty(s)]
    if not kept:
        raise ValueError("cat of legacy empty tensors only")
    rank = len(shapes[kept[0]])
    if rank == 0 or any(len(shapes[k]) != rank for k in kept):
        raise ValueError("cat of operands of ranks %s"
                         % [len(shapes[k]) for k in kept])
    if not -rank <= dim < rank:
        raise ValueError("cat dim %d out of range for rank %d" % (dim, rank))
    return kept, dim % rank
