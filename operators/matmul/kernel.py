"""GEMM C = A @ B with fp32 accumulation on tensor cores (ct.mma), K-loop over BK tiles.

A: (M, K), B: (K, N), C: (M, N), one (BM, BN) output tile per block. Ragged M/N/K edges are
zero-padded on load (zeros add nothing to the dot products) and clipped on store.
"""
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def matmul_kernel(a, b, c, BM: ConstInt, BN: ConstInt, BK: ConstInt):
    """a: (M, K), b: (K, N), c: (M, N), one dtype (f16/bf16); grid = (cdiv(M, BM), cdiv(N, BN))."""
    bm = ct.bid(0)
    bn = ct.bid(1)
    k_tiles = ct.num_tiles(a, axis=1, shape=(BM, BK))
    acc = ct.full((BM, BN), 0.0, dtype=ct.float32)
    for k in range(k_tiles):
        ta = ct.load(a, index=(bm, k), shape=(BM, BK), padding_mode=ct.PaddingMode.ZERO)
        tb = ct.load(b, index=(k, bn), shape=(BK, BN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(bm, bn), tile=ct.astype(acc, c.dtype))


def launch(a, b, c, *, BM, BN, BK):
    """Launch on the current torch stream; grid = (cdiv(M, BM), cdiv(N, BN), 1)."""
    import torch

    grid = ((a.shape[0] + BM - 1) // BM, (b.shape[1] + BN - 1) // BN, 1)
    ct.launch(torch.cuda.current_stream(), grid, matmul_kernel, (a, b, c, BM, BN, BK))
