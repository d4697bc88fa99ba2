"""Row softmax over the last dimension, persistent blocks of BM rows.

Each block walks row tiles bid, bid + num_blocks, ... (persistent scheduling: the grid is
capped at what the GPU keeps resident). A (BM, TILE) tile with TILE >= N is loaded through a
partition view padded with -inf, so padded lanes vanish from both the max and the sum.
Math in fp32: y = exp(x - max) / sum(exp(x - max)).
"""
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def softmax_kernel(x, y, BM: ConstInt, TILE: ConstInt):
    """x, y: (M, N) arrays of one dtype, N <= TILE; grid = (min(cdiv(M, BM), resident blocks),)."""
    row_tiles = ct.num_tiles(x, axis=0, shape=(BM, TILE))
    for i in range(ct.bid(0), row_tiles, ct.num_blocks(0)):
        t = ct.astype(ct.load(x, index=(i, 0), shape=(BM, TILE), padding_mode=ct.PaddingMode.NEG_INF), ct.float32)
        m = ct.max(t, axis=1, keepdims=True)
        e = ct.exp(t - m)
        s = ct.sum(e, axis=1, keepdims=True)
        ct.store(y, index=(i, 0), tile=ct.astype(e / s, y.dtype))


def launch(x, y, *, BM, TILE, blocks_per_sm=4):
    """Launch on the current torch stream with a persistent grid."""
    import torch

    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    tiles = (x.shape[0] + BM - 1) // BM
    grid = (max(1, min(tiles, sms * blocks_per_sm)), 1, 1)
    ct.launch(torch.cuda.current_stream(), grid, softmax_kernel, (x, y, BM, TILE))
