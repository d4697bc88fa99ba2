"""Constructs of FlashInfer's paged decode kernels (TileGym's fmha_decode_bsr), one small
kernel each (test operator, written for tileport's tests)."""
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def mma_two_names_kernel(a, b, c, BM: ConstInt, LOAD_K: ConstInt, BK: ConstInt, BN: ConstInt):
    # a's tile is (BM, LOAD_K), b's (BK, BN): one contraction dim named twice (LOAD_K == BK)
    bid = ct.bid(0)
    x = ct.load(a, index=(bid, 0), shape=(BM, LOAD_K))
    y = ct.load(b, index=(0, 0), shape=(BK, BN))
    acc = ct.mma(x, y, acc=ct.zeros((BM, BN), dtype=ct.float32))
    ct.store(c, index=(bid, 0), tile=ct.astype(acc, c.dtype))


@ct.kernel
def scatter_tuple_kernel(x, y, TILE: ConstInt):
    # the scatter's index tuple is bound to a name first
    row = ct.bid(0)
    cols = ct.arange(TILE, dtype=ct.int32)
    t = ct.gather(x, (row, cols))
    where = (row, cols + 1)
    ct.scatter(y, where, t * 2)
