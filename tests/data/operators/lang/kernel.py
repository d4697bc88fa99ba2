"""Test operator: cuTile Python's language beyond TileGym's dialect (issue 34 item 2), one
small kernel per construct kind.

tests/test_language.py ports every kernel here for an f16 and an f32 variant with the real
compilers and requires an IR diff PASS; tests/data/ir/constructs/ keeps their f32 Tile IR for
the mutation suite (tests/test_mutations.py).
"""
import cuda.tile as ct
import numpy as np
from cuda.tile._numeric_semantics import RoundingMode as RM

ConstInt = ct.Constant[int]
NEG_BIG = -np.inf           # a module-level numpy constant


@ct.kernel
def np_const_kernel(x, y, TILE: ConstInt):
    """numpy's float constants inside a kernel: np.pi, -np.inf, and one bound at module level."""
    bid = ct.bid(0)
    t = ct.astype(ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO), ct.float32)
    m = ct.where(t > 0.0, t * np.pi, -np.inf)
    m = ct.maximum(m, ct.full((TILE,), NEG_BIG, dtype=ct.float32))
    ct.store(y, index=(bid,), tile=ct.astype(m, y.dtype))


@ct.kernel
def rm_alias_kernel(x, y, TILE: ConstInt):
    """RoundingMode imported under another name from the module that defines it."""
    bid = ct.bid(0)
    t = ct.astype(ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO), ct.float32)
    e = ct.exp(t, rounding_mode=RM.APPROX)
    q = ct.truediv(e, t + 2.0, rounding_mode=RM.APPROX)
    ct.store(y, index=(bid,), tile=ct.astype(q, y.dtype))


@ct.kernel
def pow_kernel(x, y, TILE: ConstInt):
    """`**` with an int exponent: a Python int (also negative), an int32 tile, an int32 scalar."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    k = ct.arange(TILE, dtype=ct.int32) % 3
    ct.store(y, index=(bid,), tile=t ** 2 + t ** -1 + t ** k + t ** bid)


@ct.kernel
def promote_acc_kernel(x, y, TILE: ConstInt):
    """float32 loop accumulators `+=` a tile of the variant's dtype (an implicit promotion):
    one takes the tile, one a product of it (an fma where the variant is float32)."""
    bid = ct.bid(0)
    acc = ct.full((TILE,), 0.0, dtype=ct.float32)
    sq = ct.zeros((TILE,), dtype=np.float32)
    for i in range(ct.cdiv(x.shape[0], TILE)):
        t = ct.load(x, index=(i,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
        acc += t
        sq = sq + t * t
    ct.store(y, index=(bid,), tile=ct.astype(acc + ct.sum(sq), y.dtype))


@ct.kernel
def fma_stmt_kernel(x, y, TILE: ConstInt):
    """A multiply and an add in separate statements rebinding one name (one fma in cuTile
    Python's IR), and a product read twice (no fma)."""
    bid = ct.bid(0)
    a = ct.astype(ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO), ct.float32)
    s = ct.mul(a, a)
    s = ct.add(s, 1.5)
    u = ct.mul(s, a)
    v = ct.sub(u, a)
    ct.store(y, index=(bid,), tile=ct.astype(v + u, y.dtype))


@ct.kernel
def bmm3_kernel(a, b, BM: ConstInt):
    """Rank-3 (batched) ct.mma and ct.matmul."""
    t = ct.load(a, index=(0, 0, 0), shape=(2, BM, BM), padding_mode=ct.PaddingMode.ZERO)
    acc = ct.mma(t, ct.permute(t, (0, 2, 1)), ct.zeros((2, BM, BM), dtype=ct.float32))
    ct.store(b, index=(0, 0, 0), tile=ct.astype(acc, b.dtype) + ct.matmul(t, t))


@ct.kernel
def spin_lock_kernel(x, locks, y, TILE: ConstInt):
    """A spin lock, as split-K matmul and layer-norm backward take one: a run-time while on
    atomic_cas's 0-d result (acquire), the critical section (every block adds its tile into
    y's first tile), then atomic_xchg releases it."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    while ct.atomic_cas(locks, 0, 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
        pass
    acc = ct.load(y, index=(0,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(0,), tile=acc + t)
    ct.atomic_xchg(locks, 0, 0, memory_order=ct.MemoryOrder.RELEASE)
