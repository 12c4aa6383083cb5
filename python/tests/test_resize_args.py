"""The torch.compile backend's reading of ATen's resize arguments
(python/fz/dynamo/resize.py: slice, narrow, select, split, constant_pad_nd
and cat), checked against Python's own slicing where it applies. No torch,
no library, no GPU:

    python3 python/tests/test_resize_args.py      (or: python3 -m pytest)

ctest runs it as unit/python_resize_args. Plain asserts.
"""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _load():
    # resize.py by path: importing the fz package would look for libfz
    path = os.path.join(HERE, os.pardir, "fz", "dynamo", "resize.py")
    spec = importlib.util.spec_from_file_location("fz_dynamo_resize", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


resize = _load()


def raises(fn, *args):
    try:
        fn(*args)
    except ValueError:
        return True
    return False


def test_slice_bounds_match_python_slicing():
    bounds = [None, 0, 1, 3, 7, 8, 100, -1, -3, -8, -100, sys.maxsize]
    for extent in (0, 1, 5, 8):
        items = list(range(extent))
        for start in bounds:
            for end in bounds:
                for step in (1, 2, 3):
                    lo, hi = resize.slice_bounds(start, end, step, extent)
                    assert 0 <= lo <= hi <= extent, (start, end, step, extent)
                    assert items[lo:hi:step] == items[start:end:step], \
                        (start, end, step, extent, lo, hi)


def test_slice_refuses_steps_below_one():
    assert raises(resize.slice_bounds, 0, 4, 0, 8)
    assert raises(resize.slice_bounds, 0, 4, -1, 8)


def test_whole_slices():
    assert resize.is_whole_slice(None, None, 1)
    assert resize.is_whole_slice(0, sys.maxsize, 1)
    assert not resize.is_whole_slice(0, sys.maxsize, 2)
    assert not resize.is_whole_slice(1, None, 1)
    assert not resize.is_whole_slice(0, -1, 1)
    assert not resize.is_whole_slice(0, 8, 1)  # 8 may be the extent or not


def test_narrow_and_select():
    assert resize.narrow_bounds(2, 3, 8) == (2, 5)
    assert resize.narrow_bounds(-3, 3, 8) == (5, 8)
    assert resize.narrow_bounds(8, 0, 8) == (8, 8)
    assert raises(resize.narrow_bounds, 6, 3, 8)    # narrow never clamps
    assert raises(resize.narrow_bounds, -9, 1, 8)
    assert raises(resize.narrow_bounds, 0, -1, 8)
    assert resize.select_index(-1, 8) == 7 and resize.select_index(3, 8) == 3
    assert raises(resize.select_index, 8, 8)
    assert raises(resize.select_index, -9, 8)


def test_split_bounds():
    # torch.split(x of 10, 4): 4, 4, 2 (the last end clamps to 10)
    assert resize.split_bounds(4, 3) == [(0, 4), (4, 8), (8, 12)]
    items = list(range(10))
    assert [items[a:b] for a, b in resize.split_bounds(4, 3)] == \
        [items[0:4], items[4:8], items[8:10]]
    assert resize.split_with_sizes_bounds([2, 0, 3]) == [(0, 2), (2, 2), (2, 5)]
    assert raises(resize.split_bounds, 0, 2)
    assert raises(resize.split_with_sizes_bounds, [2, -1])


def test_pad_widths():
    # F.pad's order: last axis first, (left, right) pairs
    assert resize.pad_widths([1, 2], 3) == ([0, 0, 1], [0, 0, 2])
    assert resize.pad_widths([1, 2, -3, 4], 3) == ([0, -3, 1], [0, 4, 2])
    assert resize.pad_widths([], 2) == ([0, 0], [0, 0])
    assert resize.padded_axes([0, 0, 0, 1], 3) == [1]
    assert resize.padded_axes([-1, 0], 2) == [1]      # a crop counts
    assert resize.pad_widths(resize.axis_pad(3, 1, 2, 5), 3) == \
        ([0, 2, 0], [0, 5, 0])
    assert resize.axis_pad(2, 1, 1, 0) == [1, 0]
    assert raises(resize.pad_widths, [1], 2)
    assert raises(resize.pad_widths, [1, 1, 1, 1, 1, 1], 2)


def test_cat_operands():
    assert resize.cat_operands([[2, 3], [4, 3]], 0) == ([0, 1], 0)
    assert resize.cat_operands([[2, 3], [2, 5]], -1) == ([0, 1], 1)
    # torch.cat skips 1-D empty operands whatever the others' rank
    assert resize.cat_operands([[0], [2, 3], [0], [2, 3]], 1) == ([1, 3], 1)
    assert resize.cat_operands([[0], [4]], 0) == ([1], 0)
    assert resize.cat_operands([[0, 3], [2, 3]], 0) == ([0, 1], 0)
    assert raises(resize.cat_operands, [[0], [0]], 0)
    assert raises(resize.cat_operands, [[2, 3], [3]], 0)
    assert raises(resize.cat_operands, [[2, 3], [2, 3]], 2)
    assert raises(resize.cat_operands, [[], []], 0)


def main():
    tests = [(k, v) for k, v in sorted(globals().items())
             if k.startswith("test_") and callable(v)]
    for name, fn in tests:
        fn()
        print("ok", name)
    print("%d tests passed" % len(tests))


if __name__ == "__main__":
    main()
