"""Test operator: loop control the suites use (tests/test_loop_control.py ports each kernel with
the real compilers): ``continue`` in a persistent loop, a ``range`` a constexpr empties.
"""
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def continue_kernel(x, flags, y, n_tiles: ConstInt, TILE: ConstInt):
    """A persistent loop over tiles: a tile whose flag is -1 is zeroed and skipped with
    ``continue``; the others are doubled (the shape of Liger's TVD with an ignored label)."""
    for i in range(ct.bid(0), n_tiles, ct.num_blocks(0)):
        f = ct.load(flags, i, shape=())
        if f == -1:
            ct.store(y, index=(i,), tile=ct.zeros((TILE,), dtype=y.dtype))
            continue
        t = ct.load(x, index=(i,), shape=(TILE,))
        ct.store(y, index=(i,), tile=t * 2.0)


@ct.kernel
def empty_range_kernel(x, y, K: ConstInt, TILE: ConstInt):
    """``range(K)`` with K 0 in one variant (a loop that never runs: Liger's KL-div with
    N_FULL_CHUNKS 0), a sum of K + 1 tiles."""
    bid = ct.bid(0)
    acc = ct.astype(ct.load(x, index=(bid,), shape=(TILE,)), ct.float32)
    for k in range(K):
        acc = acc + ct.astype(ct.load(x, index=(bid + k,), shape=(TILE,)), ct.float32)
    ct.store(y, index=(bid,), tile=ct.astype(acc, y.dtype))


@ct.kernel
def float_scalar_if_kernel(x, y, s, TILE: ConstInt):
    """A run-time f32 scalar compared with numbers (Liger's GRPO: ``if delta != 0.0``): cuTile
    Python's cmpf on 0-d tiles (unordered for ``!=``), an ``if`` on each."""
    bid = ct.bid(0)
    t = ct.astype(ct.load(x, index=(bid,), shape=(TILE,)), ct.float32)
    if s != 0.0:
        t = ct.minimum(t, ct.full((TILE,), s, dtype=ct.float32))
    if s > 1.5:
        t = t * 2.0
    ct.store(y, index=(bid,), tile=ct.astype(t, y.dtype))


@ct.kernel
def branch_bound_kernel(x, y, s, TILE: ConstInt):
    """A name first bound in both branches of a run-time ``if`` and read after it (Liger's
    GRPO: ``coef_1_for_loss``): cuTile Python yields it from the ``if``."""
    bid = ct.bid(0)
    t = ct.astype(ct.load(x, index=(bid,), shape=(TILE,)), ct.float32)
    if s != 0.0:
        w = ct.minimum(t, ct.full((TILE,), s, dtype=ct.float32))
    else:
        w = t
    ct.store(y, index=(bid,), tile=ct.astype(w * 3.0, y.dtype))


@ct.kernel
def invariant_kernel(x, w, y, n_tiles: ConstInt, TILE: ConstInt):
    """A loop whose body reads values it cannot change (the shape of Liger's neighborhood
    attention backward, which loads its query tile inside its key loop): w's tile and the scale
    made from it are invariant, cuTile Python moves them before the loop; y's tile is read where
    the loop stores to y, so it stays. x's tile index is i written the long way: its product
    ``bid * n_tiles`` is invariant (cuTile Python moves that op alone), the rest reads i."""
    bid = ct.bid(0)
    acc = ct.zeros((TILE,), dtype=ct.float32)
    for i in range(n_tiles):
        wt = ct.astype(ct.load(w, index=(bid,), shape=(TILE,)), ct.float32)
        scale = wt * 0.5 + 1.0
        t = ct.astype(ct.load(x, index=((bid * n_tiles + i) % n_tiles,), shape=(TILE,)), ct.float32)
        acc = acc + t * scale
        prev = ct.astype(ct.load(y, index=(bid,), shape=(TILE,)), ct.float32)
        ct.store(y, index=(bid,), tile=ct.astype(acc + prev, y.dtype))
