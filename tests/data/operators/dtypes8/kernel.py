"""Variant dtypes beyond f16 / bf16 / f32 (issue 34 item 2 f): an f64 elementwise kernel, an
f8 matmul with an f32 accumulator, and e8m0 block scales read as a tile (test operator)."""
import cuda.tile as ct


@ct.kernel
def f64_axpy_kernel(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    ct.store(y, index=(bid,), tile=t * 3.0 - 0.25)


@ct.kernel
def f8_mm_kernel(a, b, c, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    acc = ct.zeros((BM, BN), dtype=ct.float32)
    for k in range(ct.num_tiles(a, axis=1, shape=(BM, BK))):
        ta = ct.load(a, index=(bm, k), shape=(BM, BK))
        tb = ct.load(b, index=(k, bn), shape=(BK, BN))
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(bm, bn), tile=acc)


@ct.kernel
def e8m0_scale_kernel(x, s, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    sc = ct.load(s, index=(bid,), shape=(1,))
    # e8m0 scales are powers of two: widened to f32 (an f32 scale array would be used as is)
    scale = sc.astype(ct.float32) if s.dtype == ct.float8_e8m0fnu else sc
    ct.store(y, index=(bid,), tile=t * scale)
