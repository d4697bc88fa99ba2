"""RMSNorm over the last dimension: y = x * rsqrt(mean(x^2) + eps) * w.

Persistent blocks walk (BM, TILE) row tiles with TILE >= N; the zero padding of ragged rows
adds nothing to the sum of squares, and the mean divides by the true N through inv_n = 1/N
(passed by the launch). The weight tile is loaded once per block. fp32 math.
Formula: Zhang & Sennrich, arXiv:1910.07467, eq. (4).
"""
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def rms_norm_kernel(x, w, y, inv_n: float, eps: float, BM: ConstInt, TILE: ConstInt):
    """x, y: (M, N); w: (N,); inv_n = 1/N, eps: f32 scalars; N <= TILE."""
    wt = ct.reshape(ct.astype(ct.load(w, index=(0,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO), ct.float32), (1, TILE))
    row_tiles = ct.num_tiles(x, axis=0, shape=(BM, TILE))
    for i in range(ct.bid(0), row_tiles, ct.num_blocks(0)):
        t = ct.astype(ct.load(x, index=(i, 0), shape=(BM, TILE), padding_mode=ct.PaddingMode.ZERO), ct.float32)
        ms = ct.sum(t * t, axis=1, keepdims=True) * inv_n
        r = ct.rsqrt(ms + eps)
        ct.store(y, index=(i, 0), tile=ct.astype(t * r * wt, y.dtype))


def launch(x, w, y, *, BM, TILE, eps=1e-6, blocks_per_sm=4):
    """Launch on the current torch stream with a persistent grid."""
    import torch

    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    tiles = (x.shape[0] + BM - 1) // BM
    grid = (max(1, min(tiles, sms * blocks_per_sm)), 1, 1)
    ct.launch(torch.cuda.current_stream(), grid, rms_norm_kernel,
              (x, w, y, 1.0 / x.shape[1], eps, BM, TILE))
