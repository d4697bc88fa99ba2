"""Test operator: a list-of-arrays parameter (issue 34 item 2 i), a grouped elementwise kernel.

tests/test_language.py: the translator BLOCKS it with cutile 0.5.0's evidence (a flagless trunci
it cannot write), and shows, with the real compilers, that the rest of the port's lowering is
cuTile Python's and that the block's cause is real.
"""
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def group_scale_kernel(xs, ys, TILE: ConstInt):
    """For each group g: ys[g] = 2 xs[g], tile by tile; len(xs) groups, each element
    read through the list by a loop variable."""
    bid = ct.bid(0)
    for g in range(len(xs)):
        t = ct.load(xs[g], index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
        ct.store(ys[g], index=(bid,), tile=t * 2.0)
