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


ConstBool = ct.Constant[bool]


def _guarded_row(x, y, row, TILE):
    # returns early for the last row; the caller ends with this call
    if row >= x.shape[0] - 1:
        return
    t = ct.load(x, index=(row, 0), shape=(1, TILE))
    ct.store(y, index=(row, 0), tile=t * 2)


@ct.kernel
def helper_guard_kernel(x, y, TILE: ConstInt):
    row = ct.bid(0)
    _guarded_row(x, y, row, TILE)


@ct.kernel
def branch_names_kernel(x, y, TILE: ConstInt, SPLIT: ConstInt):
    # col and shift are first bound in both branches, read after the if
    bid = ct.bid(0)
    if bid < SPLIT:
        col = bid % 2
        shift = 1
    else:
        col = bid // SPLIT
        shift = bid % 3
    t = ct.load(x, index=(bid, col + shift), shape=(1, TILE))
    ct.store(y, index=(bid, 0), tile=t)


@ct.kernel
def none_placeholder_kernel(x, y, TILE: ConstInt, HAS_BIAS: ConstBool):
    # bias stays None unless HAS_BIAS, and is read only under HAS_BIAS
    bid = ct.bid(0)
    bias = None
    if HAS_BIAS:
        bias = ct.load(x, index=(0,), shape=(TILE,))
    t = ct.load(x, index=(bid,), shape=(TILE,))
    if HAS_BIAS:
        t = t + bias
    ct.store(y, index=(bid,), tile=t)


def _gather_pages(cache, table, b, BLOCK, LOAD, D):
    # NUM pages of LOAD rows each (NUM computed from constexprs in a helper)
    NUM = BLOCK // LOAD
    ids = ct.gather(table, b * NUM + ct.arange(NUM, dtype=ct.int32), padding_value=0)
    pages = ct.load_advanced_indexing(cache, (ids, ct.Slice(0, LOAD), ct.Slice(0, D)),
                                      padding_mode=ct.PaddingMode.ZERO)
    return ct.reshape(pages, (NUM * LOAD, D))


@ct.kernel
def paged_gather_kernel(cache, table, y, BLOCK: ConstInt, LOAD: ConstInt, D: ConstInt):
    # rows [b * BLOCK, (b + 1) * BLOCK) of y from the pages table lists for block b
    b = ct.bid(0)
    t = _gather_pages(cache, table, b, BLOCK, LOAD, D)
    ct.store(y, index=(b, 0), tile=t * 2)


def _chunk(x, b, BLOCK, LOAD):
    # a tile size computed from two constexprs inside a helper
    NUM = BLOCK // LOAD
    return ct.load(x, index=(b,), shape=(NUM,))


@ct.kernel
def helper_size_kernel(x, y, BLOCK: ConstInt, LOAD: ConstInt):
    b = ct.bid(0)
    ct.store(y, index=(b,), tile=_chunk(x, b, BLOCK, LOAD) * 2)
